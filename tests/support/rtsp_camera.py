#!/usr/bin/python3
"""A real RTSP camera for the integration tests: GStreamer's RTSP server (Debian packages
python3-gi, gir1.2-gst-rtsp-server-1.0, gstreamer1.0-plugins-*) serving a live 25 fps H.264 test
pattern at /cam1 (no B-frames, a keyframe per second) and /bframes (main profile with two B-frames:
its RTP timestamps go back and forth, and its first RTP packets reach FFmpeg without timestamps); the same
as H.265 (x265enc, rtph265pay) at /hevc and /hevc-bframes; /cam1-sub is /cam1's sub stream, 320x180 H.264 (a
camera's low-resolution second encoding); /cam1's video with a 440 Hz sine as audio at /av-aac (voaacenc
48 kHz mono, rtpmp4gpay: RFC 3640 AAC-hbr), /av-pcmu (G.711 mu-law 8 kHz, payload type 0, 20 ms
packets) and /av-opus (48 kHz stereo, RFC 7587). Usage: rtsp_camera.py PORT [KBPS [USER:PASSWORD]] (0: any
free port; KBPS: x264's bitrate, 0 or absent for its own, 2048, e.g. lower for many cameras on a slow simulated
disk; USER:PASSWORD: every mount asks for these credentials with HTTP Digest, as most IP cameras do).
Prints "ready PORT" once it listens. Run with Debian's /usr/bin/python3 (it has gi)."""
import sys

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstRtspServer", "1.0")
gi.require_version("GstRtsp", "1.0")
from gi.repository import GLib, Gst, GstRtsp, GstRtspServer  # noqa: E402

Gst.init(None)
server = GstRtspServer.RTSPServer()
server.set_address("127.0.0.1")
server.set_service(sys.argv[1] if len(sys.argv) > 1 else "0")
bitrate = f"bitrate={int(sys.argv[2])} " if len(sys.argv) > 2 and int(sys.argv[2]) > 0 else ""
credentials = sys.argv[3].split(":", 1) if len(sys.argv) > 3 and sys.argv[3] else None
if credentials:
    auth = GstRtspServer.RTSPAuth()
    auth.set_supported_methods(GstRtsp.RTSPAuthMethod.DIGEST)
    token = GstRtspServer.RTSPToken()
    token.set_string("media.factory.role", "viewer")
    auth.add_digest(credentials[0], credentials[1], token)
    server.set_auth(auth)


def add_mount(path, launch):
    # One shared pipeline per path, behind the credentials when there are some.
    factory = GstRtspServer.RTSPMediaFactory()
    factory.set_shared(True)
    factory.set_launch(launch)
    if credentials:
        permissions = GstRtspServer.RTSPPermissions()
        permissions.add_permission_for_role("viewer", "media.factory.access", True)
        permissions.add_permission_for_role("viewer", "media.factory.construct", True)
        factory.set_permissions(permissions)
    server.get_mount_points().add_factory(path, factory)


def mount(path, bframes):
    add_mount(path,
        f"( videotestsrc is-live=true pattern={'smpte' if bframes == 0 else 'ball'} ! video/x-raw,width=320,height=240,framerate=25/1 "
        f"! x264enc {'tune=zerolatency ' if bframes == 0 else ''}speed-preset={'ultrafast' if bframes == 0 else 'veryfast'} key-int-max=25 {bitrate}"
        f"bframes={bframes} {'b-adapt=false ' if bframes else ''}"
        # Without the main profile in the caps x264enc negotiates baseline, which has no B-frames.
        f"{'! video/x-h264,profile=main ' if bframes else ''}! h264parse config-interval=-1 ! rtph264pay name=pay0 pt=96 )")


def mount_hevc(path, bframes):
    # H.265 cameras: x265 with a keyframe per second, parameter sets before every keyframe (as
    # cameras send them); with B-frames, a fixed mini-GOP (no zerolatency, which forbids them).
    options = f"bframes={bframes}:b-adapt=0:scenecut=0" if bframes else "bframes=0:scenecut=0"
    add_mount(path,
        f"( videotestsrc is-live=true pattern=ball ! video/x-raw,width=320,height=240,framerate=25/1 "
        f"! x265enc {'tune=zerolatency ' if bframes == 0 else ''}speed-preset=ultrafast key-int-max=25 {bitrate}"
        f"option-string={options} ! h265parse config-interval=-1 ! rtph265pay name=pay0 pt=96 )")


# Cameras with audio: /cam1's video and a sine as a second track (pay1), each codec a camera sends.
AUDIO = {
    "/av-aac": "audio/x-raw,rate=48000,channels=1 ! voaacenc bitrate=64000 ! rtpmp4gpay name=pay1 pt=97",
    # 20 ms a packet (160 bytes), as cameras send G.711 (ptime 20): left alone, rtppcmupay packs
    # audiotestsrc's 1024-sample buffers whole, 128 ms a packet.
    "/av-pcmu": "audio/x-raw,rate=8000,channels=1 ! mulawenc "
                "! rtppcmupay name=pay1 pt=0 min-ptime=20000000 max-ptime=20000000",
    "/av-opus": "audio/x-raw,rate=48000,channels=2 ! opusenc ! rtpopuspay name=pay1 pt=111",
}
for audio_path, audio in AUDIO.items():
    add_mount(audio_path,
        "( videotestsrc is-live=true pattern=smpte ! video/x-raw,width=320,height=240,framerate=25/1 "
        f"! x264enc tune=zerolatency speed-preset=ultrafast key-int-max=25 {bitrate}bframes=0 "
        "! h264parse config-interval=-1 ! rtph264pay name=pay0 pt=96 "
        f"audiotestsrc is-live=true wave=sine freq=440 ! audioconvert ! audioresample ! {audio} )")

mount("/cam1", 0)
mount("/bframes", 2)
mount_hevc("/hevc", 0)
mount_hevc("/hevc-bframes", 2)

# Sub streams: a camera's second, low-resolution encoding of the same scene (substream_url).
add_mount("/cam1-sub",
    "( videotestsrc is-live=true pattern=smpte ! video/x-raw,width=320,height=180,framerate=25/1 "
    "! x264enc tune=zerolatency speed-preset=ultrafast key-int-max=25 bitrate=256 bframes=0 "
    "! h264parse config-interval=-1 ! rtph264pay name=pay0 pt=96 )")
server.attach(None)
print("ready", server.get_bound_port(), flush=True)
GLib.MainLoop().run()
