from tests.model_server import model_server, model_server_factory  # noqa: F401
