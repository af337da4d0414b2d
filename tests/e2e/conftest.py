from tests.small_disk import small_disk  # noqa: F401
