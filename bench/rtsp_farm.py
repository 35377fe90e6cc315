#!/usr/bin/python3
"""The camera farm of `vigil bench rtsp`: K simulated RTSP cameras at rtsp://127.0.0.1:PORT/camN
(N = 0..K-1), all serving one pre-encoded H.264 clip (Annex B, an access unit delimiter before each
frame, no B-frames) looped at real time. Nothing is encoded here: the clip is split into access
units once, and one thread pushes the next access unit of every playing camera into its appsrc
every frame interval; GStreamer only packetises (h264parse ! rtph264pay). Timestamps come from the
pipeline clock at push time (do-timestamp), so the loop is seamless and the cameras are live.
Each camera's media is shared by its clients (vigild, then the peer) and starts at the clip's
first frame, an IDR with SPS/PPS; it pauses (keeps its place) when no client plays it.
Each camera advertises MAX_BPS in its SDP (b=AS), as IP cameras advertise their encoder's configured
bitrate; 0 or absent: no b=AS, the recorder measures a GOP instead.
Usage: rtsp_farm.py CLIP FPS K [PORT [MAX_BPS]]   (PORT 0 or absent: any free port). Prints "ready PORT"
once it listens. Run with Debian's /usr/bin/python3 (python3-gi, gir1.2-gst-rtsp-server-1.0)."""
import sys
import threading
import time

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstRtspServer", "1.0")
from gi.repository import GLib, Gst, GstRtspServer  # noqa: E402

AUD = b"\x00\x00\x00\x01\x09"


def access_units(path):
    """The clip's access units, each starting with its delimiter (ffmpeg -x264-params aud=1)."""
    data = open(path, "rb").read()
    starts = []
    at = data.find(AUD)
    while at != -1:
        starts.append(at)
        at = data.find(AUD, at + 1)
    if not starts:
        sys.exit(f"{path}: no access unit delimiters (encode it with -x264-params aud=1)")
    starts.append(len(data))
    return [data[a:b] for a, b in zip(starts, starts[1:])]


clip_path, fps, cameras = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
port = sys.argv[4] if len(sys.argv) > 4 else "0"
max_bps = int(sys.argv[5]) if len(sys.argv) > 5 else 0
# GStreamer's RTSP server writes b=AS from a stream tag with the maximum bitrate.
advertise = f"! taginject tags=maximum-bitrate=(uint){max_bps} " if max_bps > 0 else ""
units = access_units(clip_path)
frame_s = 1.0 / fps

Gst.init(None)
lock = threading.Lock()
playing = {}  # appsrc of a playing camera -> [index of its next access unit]


def on_configure(_factory, media):
    # The clip's first frame (IDR, SPS, PPS) now, so that the payloader knows its caps and the
    # server can answer DESCRIBE; the rest only while the media plays: pushed before PLAY they
    # would queue in the appsrc and reach the first client as a burst.
    src = media.get_element().get_by_name("src")
    src.emit("push-buffer", Gst.Buffer.new_wrapped(units[0]))
    next_unit = [1]

    def on_state(_media, state):
        with lock:
            if state == Gst.State.PLAYING:
                playing.setdefault(src, next_unit)
            else:
                playing.pop(src, None)

    media.connect("new-state", on_state)
    media.connect("unprepared", lambda _media: on_state(_media, Gst.State.NULL))


def pusher():
    # One clock for all cameras: frame n of the schedule at start + n * frame_s; a late tick
    # pushes once and catches up on the schedule rather than bursting.
    start = time.monotonic()
    n = 0
    while True:
        n += 1
        delay = start + n * frame_s - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        with lock:
            targets = list(playing.items())
        for src, next_unit in targets:
            src.emit("push-buffer", Gst.Buffer.new_wrapped(units[next_unit[0] % len(units)]))
            next_unit[0] += 1


server = GstRtspServer.RTSPServer()
server.set_address("127.0.0.1")
server.set_service(port)
mounts = server.get_mount_points()
for i in range(cameras):
    factory = GstRtspServer.RTSPMediaFactory()
    factory.set_shared(True)
    factory.set_launch(
        "( appsrc name=src is-live=true do-timestamp=true format=time "
        f"caps=video/x-h264,stream-format=byte-stream,alignment=au,framerate={fps}/1 "
        f"! h264parse config-interval=-1 {advertise}! rtph264pay name=pay0 pt=96 )")
    factory.connect("media-configure", on_configure)
    mounts.add_factory(f"/cam{i}", factory)
server.attach(None)
threading.Thread(target=pusher, daemon=True).start()
print("ready", server.get_bound_port(), flush=True)
GLib.MainLoop().run()
