"""A small CNN trained on the CPU with a tqdm bar, as a user's training script is written.

torchvision's ``FakeData`` is the usual stand-in dataset, but torchvision cannot be imported beside
torch 2.13.0 here (no matching build), so the same thing is written out: random 3×32×32 images with
random labels among 10 classes, a ``TensorDataset`` of them."""

import sys

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
from tqdm import tqdm

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 300
torch.manual_seed(0)
images, labels = torch.randn(512, 3, 32, 32), torch.randint(0, 10, (512,))
loader = DataLoader(TensorDataset(images, labels), batch_size=8, shuffle=True)
batches = (batch for _ in range(steps) for batch in loader)  # as many epochs as it takes
model = nn.Sequential(
    nn.Conv2d(3, 8, 3, padding=1),
    nn.ReLU(),
    nn.MaxPool2d(2),
    nn.Conv2d(8, 16, 3, padding=1),
    nn.ReLU(),
    nn.AdaptiveAvgPool2d(1),
    nn.Flatten(),
    nn.Linear(16, 10),
)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
print(f"torch {torch.__version__} on {next(model.parameters()).device}", flush=True)
for _, (x, y) in zip(tqdm(range(steps), desc="train", mininterval=0.2), batches, strict=False):
    optimizer.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
print(f"final loss {loss.item():.3f}", flush=True)
