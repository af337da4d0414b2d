"""The child side of the outside systems that run in environments of their own (own_env.py).

Run by the system's own Python with this folder's parent on PYTHONPATH (`python -m
children.hindsight_child`): these modules import the standard library and the system's library
only, never pytest-beam, whose dependencies are not in that environment.
"""
