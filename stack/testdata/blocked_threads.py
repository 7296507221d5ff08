# Target of python_stack_test: threads blocked in known functions. The test
# finds the expected line numbers through the "MARK:" comments.
#  - main thread: outer -> middle -> inner_blocked, blocked in os.read
#  - "waiter": wait_on_lock, blocked in lock.acquire (GIL released); it names
#    its OS thread "pt_waiter" first, as PyTorch names its threads
#  - "spinner": spin_holding_gil, a pure-Python loop: the only thread that
#    wants the GIL, so it holds it whenever the process is stopped
import ctypes
import os
import sys
import threading

ready_fd = int(sys.argv[1])
block_r, block_w = os.pipe()
lock = threading.Lock()
lock.acquire()
started = threading.Barrier(3)


def wait_on_lock():
    ctypes.CDLL(None).prctl(15, b"pt_waiter", 0, 0, 0)  # PR_SET_NAME
    started.wait()
    lock.acquire()  # MARK:lock


def spin_holding_gil():
    started.wait()
    n = 0
    while True: n += 1  # MARK:spin


def inner_blocked():
    os.write(ready_fd, b"ready\n")
    os.read(block_r, 1)  # MARK:read


def middle():
    inner_blocked()  # MARK:middle


def outer():
    middle()  # MARK:outer


threading.Thread(target=wait_on_lock, name="waiter", daemon=True).start()
threading.Thread(target=spin_holding_gil, name="spinner", daemon=True).start()
started.wait()
outer()  # MARK:module
