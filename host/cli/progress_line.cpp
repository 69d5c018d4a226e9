#include "host/cli/progress_line.hpp"

#include <unistd.h>

#include <iostream>
#include <memory>

namespace ctx::cli {
namespace {

constexpr std::chrono::milliseconds kRedrawEvery{100};
constexpr std::size_t kBarWidth = 24;

}  // namespace

ProgressLine::ProgressLine(std::ostream& out, Clock clock)
    : out_(out),
      clock_(clock ? std::move(clock) : Clock([] { return std::chrono::steady_clock::now(); })) {}

ProgressLine::~ProgressLine() {
  if (drawn_) out_ << "\r\x1b[K" << std::flush;  // the line goes; what follows starts clean
}

std::string ProgressLine::render(std::string_view phase, std::size_t done, std::size_t total) {
  std::string what;
  if (phase == "read") {
    what = "reading the catalog";
  } else if (phase == "objects") {
    what = "writing objects";
  } else if (phase == "graph") {
    what = "building the planning graph";
  } else {
    what = "importing";
  }
  std::string line = "ctx: " + what;
  if (total == 0) {  // a count without a known end
    if (done > 0) line += ": " + std::to_string(done) + (done == 1 ? " entry" : " entries");
    return line;
  }
  if (done > total) done = total;
  const std::size_t filled = done * kBarWidth / total;
  const std::size_t percent = done * 100 / total;
  line += " [" + std::string(filled, '#') + std::string(kBarWidth - filled, '-') + "] ";
  const std::string pct = std::to_string(percent);
  line += std::string(3 - std::min<std::size_t>(3, pct.size()), ' ') + pct + "%";
  if (total > 1) line += " " + std::to_string(done) + "/" + std::to_string(total);
  return line;
}

void ProgressLine::update(std::string_view phase, std::size_t done, std::size_t total) {
  const auto now = clock_();
  const bool new_phase = phase != phase_;
  const bool end = total > 0 && done >= total;
  if (!new_phase && !end && drawn_ && now - last_draw_ < kRedrawEvery) return;
  phase_ = std::string(phase);
  last_draw_ = now;
  drawn_ = true;
  out_ << "\r" << render(phase, done, total) << "\x1b[K" << std::flush;
}

runtime::CatalogProgress terminal_progress(const CommandIo& io, bool json,
                                           std::unique_ptr<ProgressLine>& line) {
  if (json || &io.err != &std::cerr || ::isatty(STDERR_FILENO) != 1) return {};
  line = std::make_unique<ProgressLine>(io.err);
  ProgressLine* drawn = line.get();
  return [drawn](std::string_view phase, std::size_t done, std::size_t total) {
    drawn->update(phase, done, total);
  };
}

}  // namespace ctx::cli
