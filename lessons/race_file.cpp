// Lesson 12's race kept in a file (transformer_race.hpp): what `attn keep-race` writes once per build
// and what the exercise checks load, so that lesson 13's exercises are compared on the reference's
// trained models whatever the last bits of a student's functions.
//
// The file, all of it covered by its last line's digest:
//     attn-race 1
//     code <digest of the sources that trained it>
//     config <seed 7, epochs=..., ...>
//     doubles <n>
//     <n doubles, 8 bytes each, in this machine's byte order>
//     digest <64-bit FNV-1a of every byte above, 16 hexadecimal digits>
// The doubles: the loss curves, the epochs' wall times, the steps, the clipped steps per model, then
// every trained weight of the three models in the order of nn::blocks.
#include "registry.hpp"
#include "transformer_race.hpp"

#include "core/digest.hpp"
#include "core/golden.hpp"
#include "nn/encoder_decoder.hpp"
#include "nn/seq2seq.hpp"
#include "race_code.hpp"

#include <fmt/format.h>

#include <cstring>
#include <mutex>
#include <utility>
#include <vector>

namespace attn::transformer {

namespace {

constexpr const char* format_line = "attn-race 1";

// Every number of a race, in the file's order, read or written through `visit(double* data, size)`.
template <class Visit>
void each_block(Race& race, Visit&& visit) {
    visit(race.curves.data(), race.curves.size());
    visit(race.seconds.data(), race.seconds.size());
    visit(&race.steps, 1);
    visit(race.clipped.data(), race.clipped.size());
    for (const nn::Block& b : nn::blocks(race.trained.without)) visit(b.data, b.size);
    for (const nn::Block& b : nn::blocks(race.trained.with)) visit(b.data, b.size);
    for (const nn::Block& b : nn::blocks(race.trained.transformer)) visit(b.data, b.size);
}

std::size_t count_of(Race& race) {
    std::size_t n = 0;
    each_block(race, [&](const double*, std::size_t size) { n += size; });
    return n;
}

std::string header(const Config& config, std::size_t doubles) {
    return fmt::format("{}\ncode {}\nconfig {}\ndoubles {}\n", format_line, race_code_digest(), config_text(config),
                       doubles);
}

// A race of the shapes race_start(config) draws, for reading a file into.
Race shaped_like(const Config& config) {
    const auto epochs = static_cast<std::size_t>(config.get("epochs"));
    Race race;
    race.curves = xt::zeros<double>({epochs + 1, std::size_t{6}});
    race.seconds = xt::zeros<double>({epochs, std::size_t{3}});
    race.trained = race_start(config).start;
    return race;
}

// The first line of `text` from `at` on, moving `at` past it; "" at the end.
std::string_view next_line(std::string_view text, std::size_t& at) {
    const std::size_t end = text.find('\n', at);
    if (end == std::string_view::npos) return {};
    const std::string_view line = text.substr(at, end - at);
    at = end + 1;
    return line;
}

}  // namespace

std::string race_code_digest() { return ATTN_RACE_CODE; }

Config kept_race_config() { return find_lesson("transformer")->defaults; }

std::string kept_race_bytes(const Config& config, const Race& trained) {
    Race race = trained;
    std::string out = header(config, count_of(race));
    each_block(race, [&](const double* data, std::size_t size) {
        out.append(reinterpret_cast<const char*>(data), size * sizeof(double));
    });
    out += fmt::format("digest {}\n", digest_text(fnv1a64(out)));
    return out;
}

Race parse_kept_race(std::string_view bytes, const Config& config, const std::string& source) {
    const auto refuse = [&](const std::string& what) {
        throw RaceFileError(printable_utf8(source + ": " + what));
    };
    Race race = shaped_like(config);
    const std::string expected = header(config, count_of(race));
    const std::size_t payload = count_of(race) * sizeof(double);
    std::size_t at = 0;
    for (std::string_view want(expected); !want.empty();) {
        std::size_t w = 0;
        const std::string_view wanted = next_line(want, w);
        want.remove_prefix(w);
        const std::string_view line = next_line(bytes, at);
        if (line != wanted)
            refuse(fmt::format("'{}' where this program needs '{}' (a race another build, code or configuration "
                               "trained: `meson compile` writes it anew)",
                               line.substr(0, 120), wanted));
    }
    const std::string digest_line = fmt::format("digest {}\n", digest_text(fnv1a64(bytes.substr(0, at + payload))));
    if (bytes.size() != at + payload + digest_line.size())
        refuse(fmt::format("{} bytes, where the race takes {}: the file is cut short or has more than a race",
                           bytes.size(), at + payload + digest_line.size()));
    if (bytes.substr(at + payload) != digest_line)
        refuse("its digest does not match its bytes: the file is damaged (`meson compile` writes it anew)");
    each_block(race, [&](double* data, std::size_t size) {
        std::memcpy(data, bytes.data() + at, size * sizeof(double));
        at += size * sizeof(double);
    });
    return race;
}

Race read_kept_race(const std::filesystem::path& file, const Config& config) {
    std::string bytes;
    try {
        bytes = read_file_bytes(file, "race file", std::uintmax_t{256} << 20);
    } catch (const GoldenError& e) {
        throw RaceFileError(e.what());
    }
    return parse_kept_race(bytes, config, file.string());
}

namespace {

std::mutex kept_file_guard;
std::filesystem::path kept_file;

}  // namespace

void decode_with_kept_race(std::filesystem::path file) {
    const std::lock_guard<std::mutex> lock(kept_file_guard);
    kept_file = std::move(file);
}

std::filesystem::path kept_race_file() {
    const std::lock_guard<std::mutex> lock(kept_file_guard);
    return kept_file;
}

}  // namespace attn::transformer
