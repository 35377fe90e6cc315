#include "client/rtsp/sdp.hpp"
