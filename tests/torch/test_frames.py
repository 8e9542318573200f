"""frames.py: length-prefixed JSON frames over a pipe, and what a broken peer looks like."""
import os
import struct
import threading
import unittest

import support  # noqa: F401
from kforge_torch.frames import MAX_FRAME_BYTES, FrameError, read_frame, write_frame


class Frames(unittest.TestCase):
    def setUp(self):
        self.r, self.w = os.pipe()
        self.addCleanup(lambda: [os.close(fd) for fd in (self.r, self.w) if fd is not None])

    def close_writer(self):
        os.close(self.w)
        self.w = None

    def test_a_frame_round_trips_and_the_end_of_input_is_none(self):
        write_frame(self.w, {"op": "setup", "sizes": {"n": 3}, "text": "ünïcode"})
        self.close_writer()
        self.assertEqual(read_frame(self.r), {"op": "setup", "sizes": {"n": 3}, "text": "ünïcode"})
        self.assertIsNone(read_frame(self.r))

    def test_a_frame_larger_than_the_pipe_buffer_arrives_whole(self):
        big = {"blob": "x" * (1 << 20)}
        writer = threading.Thread(target=write_frame, args=(self.w, big))
        writer.start()
        self.assertEqual(read_frame(self.r), big)
        writer.join()

    def test_an_input_that_ends_inside_a_frame_is_an_error(self):
        os.write(self.w, struct.pack("<I", 10) + b'{"a"')
        self.close_writer()
        with self.assertRaisesRegex(FrameError, "ended"):
            read_frame(self.r)

    def test_a_length_past_the_limit_is_an_error(self):
        os.write(self.w, struct.pack("<I", MAX_FRAME_BYTES + 1))
        with self.assertRaisesRegex(FrameError, "past the limit"):
            read_frame(self.r)

    def test_a_body_that_is_not_a_json_object_is_an_error(self):
        os.write(self.w, struct.pack("<I", 2) + b"[]")
        with self.assertRaisesRegex(FrameError, "not an object"):
            read_frame(self.r)


if __name__ == "__main__":
    unittest.main()
