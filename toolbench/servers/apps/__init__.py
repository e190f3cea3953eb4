"""The applications of the reference studies, served by the bundled stacks: study 000's
Flask app and study 003's raw-socket servers. Nothing here runs at import time."""
