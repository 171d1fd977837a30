"""`tapeflow.image`: resizing, flips and photometric adjustments of images."""
from .ops.image import (ResizeMethod, adjust_brightness, adjust_contrast,  # noqa: F401
                        convert_image_dtype, flip_left_right, flip_up_down,
                        per_image_standardization, resize)
from .ops.image import (adjust_gamma, adjust_hue, adjust_saturation,  # noqa: F401,E402
                        central_crop, crop_to_bounding_box, grayscale_to_rgb, hsv_to_rgb,
                        image_gradients, pad_to_bounding_box, resize_with_crop_or_pad,
                        resize_with_pad, rgb_to_grayscale, rgb_to_hsv, rot90,
                        total_variation, transpose)
