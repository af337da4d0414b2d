"""sha256 pins of every BEAM file the harness reads.

The local pins are the upstream repository's files at the commit below; the parquet pin is the
Hugging Face split at the pinned revision. Both give the same records.
"""

UPSTREAM_COMMIT = "b2a3ee8ba12d68f83143dda191097dc3e028ddd3"

HF_REPO_ID = "Mohammadta/BEAM"
HF_REVISION = "3205395e897e7318c7b094ef4e6047b9b82dbb03"
HF_FILENAME = "data/100K-00000-of-00001.parquet"
HF_SIZE = 5_429_768
HF_SHA256 = "c0519be25907005ba873c927c50877471d550873039d96c041554d0075a78ace"

# path relative to the data root -> sha256
LOCAL_SHA256: dict[str, str] = {
    "chats/100K/1/chat.json": "ea71efd5dcc13f7366d3737b45d532eadb3d1497f3d6f23d1fa1c4004d5ffdf2",
    "chats/100K/1/probing_questions/probing_questions.json": "047398ff1497674b11585e7b4829c3d64d2d5e63f7f3572c826b73ca1faaf898",
    "chats/100K/10/chat.json": "de18b7b0ad73491f338296b64ae30f16b94d77404420d971d3f6b513d190ad1c",
    "chats/100K/10/probing_questions/probing_questions.json": "e9bf9bb545b350425a770ef65b501434ba9983c7535b4524dd6ae4d5743b5a95",
    "chats/100K/11/chat.json": "45cb4fab51042278e6a57f524fca4cd4b8941cbbd091f9ec8fb92dad4de31b12",
    "chats/100K/11/probing_questions/probing_questions.json": "3aa98a74a03be59472834422dd14004d3b432a0c800bbef8f316865834449c08",
    "chats/100K/12/chat.json": "2654160ebfcbd8a9f7d47a0340503cb301b0f54cb472f93578fa20e78c84c430",
    "chats/100K/12/probing_questions/probing_questions.json": "c36c9b1d4df0d063d1c7db81b35b5ea4743e38a804382d6e557f37ec46e1d6e3",
    "chats/100K/13/chat.json": "aea586c143dab53cb5a021b3fab23380d5d9628fea1c4b718f91411019166dc6",
    "chats/100K/13/probing_questions/probing_questions.json": "02dee0ba1d5576aed8ac535328a23fe4f882f6dcff3b96e039162e10d547236b",
    "chats/100K/14/chat.json": "43fbffd9ca235a980203faf4c5d6f636e97af4f31f6d91d9cbe42035ab4f0b0d",
    "chats/100K/14/probing_questions/probing_questions.json": "f30350303b4ccd52a36deaf57750a2bf6924fa5885da92d8230797a82dcfbe5f",
    "chats/100K/15/chat.json": "e758dfbdfe6d5a6bd060c6577e6f0282eb445fd7f93150208dcd56e8f8676f43",
    "chats/100K/15/probing_questions/probing_questions.json": "6d6ed59bd8cad87ce279c08f42137c2199502d09f198cfa880ef3ab04debd891",
    "chats/100K/16/chat.json": "414f11e16156d490cfb8449db62bddae88308e5b37fa79df54b147637f059afd",
    "chats/100K/16/probing_questions/probing_questions.json": "abf20d16a37322112af0fe48f5c43be0d824d54ae2bb2c5e3e069c6e84c54033",
    "chats/100K/17/chat.json": "6eb309c34fd98025327bbe46dec8cdfbf76304c249d3f579f02f46cea06eeefe",
    "chats/100K/17/probing_questions/probing_questions.json": "7948981c2e40751bfe9ace82e53497d32229245e6012a2e5d4da2e801c929451",
    "chats/100K/18/chat.json": "3c08576a5726fa48b9f906bc8699fab37e33cc5219f076f76374f7c1302449cb",
    "chats/100K/18/probing_questions/probing_questions.json": "d813db9e2b416e6ac7cc22841b131ea5c80e5931e690f81bb37aa16c3b9edc3a",
    "chats/100K/19/chat.json": "4c6dd78fa5aa6bd645eab8a3f041eac290c87564fd822582477c8e446979850f",
    "chats/100K/19/probing_questions/probing_questions.json": "b911651b2b18e835aaac58b2bc3cb018bc782e252b9161dca8174961ca498ce2",
    "chats/100K/2/chat.json": "3a3bd796f4aa24e8f34e718dc2823ae942663349eb89054f03885051e2daf1c4",
    "chats/100K/2/probing_questions/probing_questions.json": "d188e929644c9ef9fcd4520e7b5a3daf2c2e069b1247a324bd13d5aadd1ed96e",
    "chats/100K/20/chat.json": "af49a279c8ca5eef5829f8155bca89b41b05fb33fef438dce0a6cac8d99a7802",
    "chats/100K/20/probing_questions/probing_questions.json": "46b679bffff904fd71ed247f5172e9a4a30ed7eb2fdaacc1d89aac0932e5f043",
    "chats/100K/3/chat.json": "432d3ae5493c04a17a5b6b0ef7c012a70e70ac5cfcaef13059fca6bedb903009",
    "chats/100K/3/probing_questions/probing_questions.json": "f53030f3753b0e0a93b330bc62d597cb66375c0c794094d7e69b7646df46e324",
    "chats/100K/4/chat.json": "e0ef0f74b1f7ac911e8e0518722335c422cbc1112048e9909911b208c51fc027",
    "chats/100K/4/probing_questions/probing_questions.json": "f69eda522cd7325830c8f78b6f02a571c992b6cf43311fa96f28043fd3c18dae",
    "chats/100K/5/chat.json": "13ac88e483e0d63d3830479fe17f961af1b414503b5077914865eca1c48a1ce8",
    "chats/100K/5/probing_questions/probing_questions.json": "bdd0819a911e46951dbf998905b8eba96a0cdb103cd3dda79ae9c6831e5f195d",
    "chats/100K/6/chat.json": "5365cdc41da212fb7143cf9f191ff7862eed8e9ca175b3728fe593adedc87871",
    "chats/100K/6/probing_questions/probing_questions.json": "7a6f88dfdeb3f1b582209a745e7c980158dbb2829a9ceae6cdb08bb868a00035",
    "chats/100K/7/chat.json": "525271b1d24179dbc2deb664c69db0bbaead5938630a0b0d5cd2881b8b79224d",
    "chats/100K/7/probing_questions/probing_questions.json": "2c00219e839d54c7cd3e4fbb396f8a2517fd9f143d3a3b8ea1c4fb9f5c4435c7",
    "chats/100K/8/chat.json": "3207b8f5aa45cd1b2d1e2f37f224831b4696d0cc2352ef514af08f2092b6c239",
    "chats/100K/8/probing_questions/probing_questions.json": "d279dbd8fd293692d29f0057b3dd2468ccb97c7da6df28ae2adc8481d9970148",
    "chats/100K/9/chat.json": "446777f3eed114c27d62030ad86cfb8ad6610fda0fc83dfe98403b8d68b74bd4",
    "chats/100K/9/probing_questions/probing_questions.json": "b7ab1c7022c0b7ac6928f4c2efadd08e2a438dc91e1288209df066cdcd5e9573",
}
