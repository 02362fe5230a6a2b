"""Runs a program with PR_SET_MDWE (memory-deny-write-execute, Linux >= 6.3): the kernel
side of the unit's MemoryDenyWriteExecute=yes. Exit 77 when the kernel lacks it.

argv: program and its arguments.
"""
import ctypes
import os
import sys

PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN = 65, 1
PROT_RWX, MAP_PRIVATE_ANONYMOUS = 7, 0x22

libc = ctypes.CDLL(None, use_errno=True)
if libc.prctl(PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN, 0, 0, 0) != 0:
    print(f"prctl(PR_SET_MDWE): {os.strerror(ctypes.get_errno())}", file=sys.stderr)
    sys.exit(77)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
if libc.mmap(None, 4096, PROT_RWX, MAP_PRIVATE_ANONYMOUS, -1, 0) != ctypes.c_void_p(-1).value:
    sys.exit("MDWE is set but a writable+executable mapping was still allowed")
os.execv(sys.argv[1], sys.argv[1:])
