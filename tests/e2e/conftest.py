from tests.model_server import model_server, model_server_factory  # noqa: F401
from tests.small_disk import small_disk  # noqa: F401
