// Eq. 4.2 through the meter, with the worked examples of thesis §4.1.1 and §4.2.1–4.2.3
// (digest seed-002 §5.2–5.5) as the expected values.
#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>

#include "storage/preemptibility_meter.hpp"

using namespace vigil::storage;
using namespace std::chrono_literals;

namespace {
double ms(Nanos t) { return static_cast<double>(t.count()) / 1e6; }
}  // namespace

TEST_CASE("the §4.1.1 example: a 500 kB read, 23 ms expected wait non-preemptible, 2.03 ms semi-preemptible",
          "[meter]") {
  // Non-preemptible: one 46 ms command (14 ms seek + 7 ms rotation + 25 ms transfer).
  PreemptibilityMeter np;
  np.command(46ms);
  CHECK(ms(np.expected_waiting()) == Catch::Approx(23.0));
  CHECK(ms(np.longest_command()) == Catch::Approx(46.0));

  // Semi-preemptible: 3 ms JIT-seek slack (idle), two 9 ms sub-seeks, 25 chunks of 1 ms.
  PreemptibilityMeter sp;
  sp.idle(3ms);
  sp.command(9ms);
  sp.command(9ms);
  for (int i = 0; i < 25; ++i) sp.command(1ms);
  CHECK(ms(sp.expected_waiting()) == Catch::Approx(2.03).margin(0.005));
  CHECK(ms(sp.longest_command()) == Catch::Approx(9.0));  // the maximum wait
  CHECK(sp.commands() == 27);
}

TEST_CASE("chunking: a 25 ms transfer in 20 kB chunks of 1 ms, 12.5 -> 0.5 ms", "[meter]") {
  PreemptibilityMeter whole, chunks;
  whole.command(25ms);
  for (int i = 0; i < 25; ++i) chunks.command(1ms);
  CHECK(ms(whole.expected_waiting()) == Catch::Approx(12.5));
  CHECK(ms(chunks.expected_waiting()) == Catch::Approx(0.5));
}

TEST_CASE("JIT-seek: 5 ms rotation with a 4 ms preemptible delay, 2.5 -> 0.1 ms", "[meter]") {
  PreemptibilityMeter rot, jit;
  rot.command(5ms);
  jit.idle(4ms);
  jit.command(1ms);
  CHECK(ms(rot.expected_waiting()) == Catch::Approx(2.5));
  CHECK(ms(jit.expected_waiting()) == Catch::Approx(0.1));
}

TEST_CASE("seek splitting: a 14 ms seek as two 9 ms sub-seeks, 7 -> 4.5 ms", "[meter]") {
  PreemptibilityMeter seek, split;
  seek.command(14ms);
  split.command(9ms);
  split.command(9ms);
  CHECK(ms(seek.expected_waiting()) == Catch::Approx(7.0));
  CHECK(ms(split.expected_waiting()) == Catch::Approx(4.5));
}

TEST_CASE("an idle disk has nothing to wait for; reset forgets", "[meter]") {
  PreemptibilityMeter m;
  CHECK(m.expected_waiting() == Nanos(0));
  m.idle(10ms);
  CHECK(m.expected_waiting() == Nanos(0));
  m.command(2ms);
  CHECK(ms(m.expected_waiting()) == Catch::Approx(0.5 * 4.0 / 12.0));
  m.reset();
  CHECK(m.commands() == 0);
  CHECK(m.expected_waiting() == Nanos(0));
}
