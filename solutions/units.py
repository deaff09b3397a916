"""Unit constants, spelled out so that GB and GiB never meet by accident.

Datasheets use decimal units (1 GB = 1e9 bytes, 1 TB/s = 1e12 bytes/s); operating systems,
PyTorch and nvidia-smi often print binary ones (1 GiB = 2**30 bytes). Every name in the kit
that holds a size or a rate carries its unit in the name.
"""

KB = 1e3
MB = 1e6
GB = 1e9
TB = 1e12
KiB = 2**10
MiB = 2**20
GiB = 2**30
TFLOP = 1e12
PFLOP = 1e15
MS = 1e-3
US = 1e-6
