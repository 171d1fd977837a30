"""`tf.keras.initializers`: tapeflow's initializers (train/initializers.py)."""
from ..train.initializers import *  # noqa: F401,F403
from ..train.initializers import deserialize, get, serialize  # noqa: F401
