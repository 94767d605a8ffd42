"""The size a disk image shows its guest, read from the image itself.

A qcow2 file is sparse and grows as the guest writes: its file size says
nothing of the disk the guest sees. The virtual size is in its header (a
big-endian 64-bit count of bytes at offset 24, after the 'QFI\\xfb'
magic). A raw file or a block device is as big as it is.
"""
import os
import struct

QCOW2_MAGIC = b'QFI\xfb'


def virtual_size(path: str) -> int:
    """Bytes the guest sees in the image at ``path`` (raises OSError)."""
    with open(path, 'rb') as image:
        header = image.read(32)
        if len(header) == 32 and header[:4] == QCOW2_MAGIC:
            size: int = struct.unpack('>Q', header[24:32])[0]
            return size
        return image.seek(0, os.SEEK_END)     # raw file or block device
