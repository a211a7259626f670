"""A small tool."""
import os


class Config:
    """Settings read from the environment."""

    def __init__(self):
        self.home = os.environ.get("HOME", "/")

    @property
    def debug(self):
        return False


def main():
    config = Config()

    def helper():
        return config.home

    print(helper())


async def fetch(url):
    return url
