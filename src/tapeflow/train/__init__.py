"""`tapeflow.train` and the training pieces: Module (module.py), layers (layers.py),
initializers (initializers.py), optimizers (optimizers.py), losses (losses.py) and
checkpoints (checkpoint.py). This package's own namespace is TensorFlow's `tf.train`
(Checkpoint, CheckpointManager, Example & co); the others are re-exported by thin public modules
(`tapeflow.layers`, `tapeflow.optimizers`, `tapeflow.losses`) and `tapeflow.Module`.
"""
from .checkpoint import (Checkpoint, CheckpointManager, latest_checkpoint,  # noqa: F401
                         CheckpointReader, list_variables, load_checkpoint, load_variable)
from .example import (BytesList, Example, Feature, FeatureList, FeatureLists,  # noqa: F401
                      Features, FloatList, Int64List, SequenceExample)
