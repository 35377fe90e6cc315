// Fuzz target: the record scanner (storage/record) and recovery's resynchronisation search
// (storage/segment_recovery find_resync) over an extent's data area built by record_ops.hpp:
// valid records of our stream and of others, sequence jumps, garbage, padding. Checked: every
// record returned lies inside the span in order with its payload right after its header,
// belongs to the stream asked for with consecutive sequences, valid_end never passes the stop,
// and a resync point is a record the scanner accepts there.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "storage/segment_recovery.hpp"
#include "tests/fuzz/record_ops.hpp"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  vigil::fuzz::Input in(data, size);
  const std::uint8_t mode = in.u8();
  const std::size_t block = (mode & 1) ? 512 : 4096;
  constexpr std::uint64_t kStream = 9;
  std::vector<std::byte> area(16 * 1024);
  std::uint64_t seq = 1;
  std::int64_t pts = 1'000'000;
  vigil::fuzz::apply_record_ops(in, area, block, kStream, seq, pts);

  const std::optional<std::uint64_t> stream = (mode & 2) ? std::optional<std::uint64_t>(kStream) : std::nullopt;
  const std::optional<std::uint64_t> first = (mode & 4) ? std::optional<std::uint64_t>(1) : std::nullopt;
  const std::size_t start = (mode & 8) ? in.u16() % (area.size() + 1) : 0;
  vigil::storage::RecordScanner scan(area, block, stream, first, start);
  std::size_t end = start;
  std::optional<std::uint64_t> last_seq;
  while (auto r = scan.next()) {
    check(r->offset >= end && r->offset + vigil::storage::kRecordHeaderBytes + r->payload.size() <= area.size());
    check(r->payload.data() == area.data() + r->offset + vigil::storage::kRecordHeaderBytes);
    check(r->payload.size() == r->header.payload_bytes && !r->header.padding());
    if (stream) check(r->header.stream_id == kStream);
    if (last_seq) check(r->header.sequence == *last_seq + 1);  // the scanner follows the first it met
    last_seq = r->header.sequence;
    end = r->offset + vigil::storage::kRecordHeaderBytes + r->payload.size();
  }
  check(scan.stop() != vigil::storage::ScanStop::none);
  check(scan.valid_end() <= area.size() && scan.valid_end() <= std::max(scan.stop_offset(), start));

  const std::size_t from = in.u16() % (area.size() + 1);
  if (auto resync = vigil::storage::find_resync(area, from, block, kStream, in.u8())) {
    check(resync->at >= from && resync->at + vigil::storage::kRecordHeaderBytes <= area.size());
    vigil::storage::RecordScanner probe(area, block, kStream, std::nullopt, resync->at);
    auto r = probe.next();
    check(r && r->offset == resync->at && r->header.sequence == resync->sequence);
  }
  return 0;
}
