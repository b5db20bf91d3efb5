"""``python -m sb3_maxdiff.hub``."""

from sb3_maxdiff.hub.cli import main

if __name__ == "__main__":
    main()
