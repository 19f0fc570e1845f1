"""A macOS process's exact argument vector, from sysctl KERN_PROCARGS2.

`ps -o args=` joins arguments with spaces, which loses the boundaries a `--settings`
JSON value needs; the kernel's buffer keeps them.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import struct

CTL_KERN = 1
KERN_ARGMAX = 8
KERN_PROCARGS2 = 49


def parse_procargs2(buffer: bytes) -> list[str] | None:
    """argc (native int), the executable path, NUL padding, then argc NUL-ended strings."""
    if len(buffer) < 4:
        return None
    (argc,) = struct.unpack_from("i", buffer, 0)
    rest = buffer[4:]
    end = rest.find(b"\0")
    if end < 0:
        return None
    position = end
    while position < len(rest) and rest[position] == 0:
        position += 1
    args = []
    for _ in range(argc):
        stop = rest.find(b"\0", position)
        if stop < 0:
            return None
        args.append(rest[position:stop].decode("utf-8", "replace"))
        position = stop + 1
    return args


def darwin_procargs(pid: int) -> list[str] | None:
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    size = ctypes.c_size_t(ctypes.sizeof(ctypes.c_int))
    argmax = ctypes.c_int(0)
    mib = (ctypes.c_int * 2)(CTL_KERN, KERN_ARGMAX)
    if libc.sysctl(mib, 2, ctypes.byref(argmax), ctypes.byref(size), None, 0) != 0:
        return None
    buffer = ctypes.create_string_buffer(argmax.value)
    size = ctypes.c_size_t(argmax.value)
    mib3 = (ctypes.c_int * 3)(CTL_KERN, KERN_PROCARGS2, pid)
    if libc.sysctl(mib3, 3, buffer, ctypes.byref(size), None, 0) != 0:
        return None
    return parse_procargs2(buffer.raw[: size.value])
