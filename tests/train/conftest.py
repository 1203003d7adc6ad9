"""Training tests read the miniature processed data of tests/mini_data.py (the `mini_data` fixture, shared
through tests/conftest.py)."""
