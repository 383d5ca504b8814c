"""Input protection and input reading in rrsplice.infra.fsutil against what the file system says
(os.stat inode numbers, a FIFO's open semantics from POSIX open(2)/fifo(7)): a hard link to
an input is that input, and a FIFO given as an input is refused without being opened."""

from __future__ import annotations

import os
import threading

import pytest

from rrsplice.infra.fsutil import InputError, WriteError, read_input, same_file, write_atomic


def test_a_hard_link_to_the_input_is_the_input(tmp_path):
    """Two names, one inode (st_ino/st_dev equal): writing the output through the second
    name would replace the input's contents as seen by any later reader of that name."""
    inp = tmp_path / "k.ptx"
    inp.write_bytes(b"original\n")
    link = tmp_path / "other-name.ptx"
    os.link(inp, link)
    a, b = os.stat(inp), os.stat(link)
    assert (a.st_ino, a.st_dev) == (b.st_ino, b.st_dev)      # the oracle: one file
    assert same_file(inp, link) and same_file(link, inp)
    with pytest.raises(WriteError) as e:
        write_atomic(link, b"new\n", protect=[inp])
    assert e.value.code == "output-is-input"
    # nothing written: the link still names the input's inode, with its old bytes
    assert os.stat(link).st_ino == a.st_ino
    assert link.read_bytes() == b"original\n" and inp.read_bytes() == b"original\n"


def test_distinct_files_are_not_the_same(tmp_path):
    x, y = tmp_path / "x", tmp_path / "y"
    x.write_bytes(b"same bytes")
    y.write_bytes(b"same bytes")
    assert not same_file(x, y)
    write_atomic(y, b"out", protect=[x])
    assert y.read_bytes() == b"out" and x.read_bytes() == b"same bytes"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
def test_a_fifo_input_is_refused_without_opening_it(tmp_path):
    """fifo(7): opening a FIFO for writing blocks until some process opens it for reading.
    A writer waiting on the FIFO must still be waiting after rrsplice refused it as an
    input: rrsplice never opened it (opening it would release the writer, then leave it
    writing into a pipe nobody reads)."""
    fifo = tmp_path / "in.ptx"
    os.mkfifo(fifo)
    opened = threading.Event()
    fds = []

    def writer():
        fds.append(os.open(fifo, os.O_WRONLY))      # blocks until a reader opens it
        opened.set()

    t = threading.Thread(target=writer, daemon=True)
    t.start()
    try:
        assert not opened.wait(0.2)                   # the writer is waiting
        with pytest.raises(InputError) as e:
            read_input(fifo)
        assert e.value.code == "not-a-file"
        assert "FIFO" in str(e.value)
        assert not opened.wait(0.5), "read_input opened the FIFO and released its writer"
    finally:
        rfd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)   # release the writer ourselves
        opened.wait(5)
        t.join(5)
        os.close(rfd)
        for fd in fds:
            os.close(fd)
