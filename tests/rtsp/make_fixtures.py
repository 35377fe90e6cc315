#!/usr/bin/env python3
"""Writes tests/rtsp/data: an H.264 and an H.265 stream at 64x48 (10 frames, a keyframe every 5,
Annex B elementary streams: NAME.es) and the RTP packets FFmpeg's RTP muxer makes of them (NAME.rtp:
each packet after its 16-bit little-endian length, the layout tests/fuzz/rtsp_media_fuzz.cpp reads),
with a small packet size so that large NAL units are fragmented, and its SDP (NAME.sdp). rtp_stream_test.cpp checks that
the depacketizer gives back the elementary stream's NAL units. Needs ffmpeg (libx264, libx265).
The files are committed: rerun only to change them."""
import os
import socket
import struct
import subprocess
import tempfile

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")


def encode(codec, path):
    args = ["ffmpeg", "-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-i",
            "testsrc=size=64x48:rate=25", "-frames:v", "10", "-pix_fmt", "yuv420p", "-g", "5", "-bf", "0"]
    if codec == "h264":
        args += ["-c:v", "libx264", "-threads", "1", "-f", "h264", path]
    else:
        args += ["-c:v", "libx265", "-x265-params", "log-level=error:pools=none:frame-threads=1",
                 "-f", "hevc", path]
    subprocess.run(args, check=True)


def packetize(es_path, sdp_path):
    """FFmpeg's RTP of ES_PATH, received on a loopback UDP socket (in order: one sender, loopback),
    and its SDP written to SDP_PATH."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    subprocess.run(["ffmpeg", "-hide_banner", "-loglevel", "error", "-i", es_path, "-c", "copy",
                    "-payload_type", "96", "-pkt_size", "200", "-sdp_file", sdp_path, "-f", "rtp",
                    f"rtp://127.0.0.1:{port}?rtcpport={port + 1}"], check=True, stdout=subprocess.DEVNULL)
    sock.settimeout(1.0)
    packets = []
    try:
        while True:
            packets.append(sock.recv(65536))
    except socket.timeout:
        pass
    return packets


def main():
    os.makedirs(HERE, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for codec in ("h264", "h265"):
            es = os.path.join(tmp, codec + ".es")
            encode(codec, es)
            packets = packetize(es, os.path.join(HERE, codec + ".sdp"))
            with open(es, "rb") as f, open(os.path.join(HERE, codec + ".es"), "wb") as out:
                out.write(f.read())
            with open(os.path.join(HERE, codec + ".rtp"), "wb") as out:
                for p in packets:
                    out.write(struct.pack("<H", len(p)) + p)
            print(codec, len(packets), "packets")


if __name__ == "__main__":
    main()
