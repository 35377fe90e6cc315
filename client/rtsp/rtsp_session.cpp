#include "client/rtsp/rtsp_message.hpp"
