"""Fixtures shared by the tf.distribute tests."""
import pytest

import tapeflow as tf


@pytest.fixture
def two_cpus():
    """Two logical CPU devices (MirroredStrategy's replicas) for one test."""
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    yield
    tf.config.set_logical_device_configuration(cpu, None)
