// Test helper process for the real-process crash test: records the deterministic script
// (tests/support/script_frames) into a volume on a FileDevice until it is killed, and reports
// each durability acknowledgement as a line "ack SEQ" on stdout, written with write(2) right
// after the flush that made SEQ durable (so the parent only learns of truly durable frames).
// Usage: vigil_crash_recorder VOLUME_FILE STREAM_ID
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "storage/file_device.hpp"
#include "storage/segment_writer.hpp"
#include "storage/volume.hpp"
#include "tests/support/script_frames.hpp"

using namespace vigil::storage;

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s VOLUME_FILE STREAM_ID\n", argv[0]);
    return 2;
  }
  const std::uint64_t stream = std::strtoull(argv[2], nullptr, 10);
  auto dev = FileDevice::open(argv[1]);
  if (!dev) return 3;
  auto vol = Volume::open(**dev);
  if (!vol) return 4;
  SegmentWriter w(**vol, stream, {.buffer_bytes = 32 * 1024, .max_segment_bytes = 200 * 1024});
  std::uint64_t seq = 1, segment = 1;
  if (!w.open_segment(segment, {}, seq, 0)) return 5;
  for (unsigned cycle = 0;; ++cycle) {
    for (unsigned i = 0; i < 1 + cycle % 4; ++i) {
      auto f = vigil::test::script_frame(seq, stream);
      if (!w.append(f.header, f.payload)) break;
      ++seq;
    }
    if (!w.write_cycle() || !flush_sync(**dev)) return 6;
    if (auto acked = w.mark_durable()) {
      std::string line = "ack " + std::to_string(*acked) + "\n";
      if (::write(STDOUT_FILENO, line.data(), line.size()) < 0) return 7;
    }
    if (w.segment_full()) {
      w.close_segment();
      if (!w.open_segment(++segment, {}, seq, 0)) return 8;  // volume full: the parent stops us well before
    }
  }
}
