#pragma once
// A Refuse answer (docs/protocol.md): why, as text and as a code, and the largest rate that
// would be admitted now (0 = none or not a rate question). Shared by recording and playback.
#include <cstdint>
#include <string>

#include "proto/vigil.pb.h"

namespace vigil::server {

inline proto::Refuse refuse(proto::RefuseReason code, std::string reason, std::uint64_t largest_bps = 0) {
  proto::Refuse r;
  r.set_reason(std::move(reason));
  r.set_reason_code(code);
  r.set_largest_rate_bps(largest_bps);
  return r;
}

}  // namespace vigil::server
