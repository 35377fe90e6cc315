#include "client/rtsp/rtp_depacketizer.hpp"
