// The translator a student keeps (attn train, attn translate; issue 42): a run stopped after an epoch, or
// killed, and run again ends with the bytes of a run never stopped; the checkpoint is an .npz whose attn.json
// names every tensor with its shape; translate translates with it and refuses bad input and bad files by
// name. Every run here is small (32 verse pairs, the quick lesson's widths): about four seconds each, most
// of it reading the two modules. Skipped, saying so, without the SWORD modules or SentencePiece.
#include "support.hpp"

#include "core/npz.hpp"
#include "text/sentencepiece.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <signal.h>
#include <sys/types.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

// Everything of this file in a namespace of its own: the test program is built as a few
// unity files (tests/meson.build), where the helpers of two files must not meet.
namespace test_translator {

using namespace attn;
using namespace attn::test;
namespace fs = std::filesystem;

namespace {

// A small run: 32 pairs, 3 epochs of 2 batches each, the quick configuration's widths.
const std::string small = " --set pairs=32 --set validation=8 --set test=8 --set epochs=3 --set vocab=200 --set width=8"
                          " --set d_model=8 --set heads=2 --set d_ff=8";

std::string attn_bin() {
    const char* bin = std::getenv("ATTN_BIN");
    REQUIRE(bin != nullptr);
    return std::string("'") + bin + "'";
}

bool can_run(std::string& why) {
    if (!bible_modules_installed(why)) return false;
    if (!text::have_sentencepiece()) {
        why = "attn was built without SentencePiece (libsentencepiece-dev)";
        return false;
    }
    return true;
}

Result train(const fs::path& out, const std::string& more = "") {
    return run_command(attn_bin() + " train --out '" + out.string() + "'" + small + more + " 2>&1");
}

// attn train into `out` with `more`, refused (exit 2) before any training, saying `says`.
void check_refused(const fs::path& out, const std::string& more, const std::string& says) {
    const Result r = train(out, more);
    INFO(r.output);
    CHECK(r.code == 2);
    CHECK_THAT(r.output, Catch::Contains(says));
    CHECK_THAT(r.output, !Catch::Contains("resuming"));
}

void write_bytes(const fs::path& file, const std::string& bytes) {
    std::ofstream out(file, std::ios::binary);
    out << bytes;
}

}  // namespace

TEST_CASE("a run stopped after an epoch, or killed, and run again ends with the bytes of a run never stopped",
          "[translator]") {
    std::string why;
    if (!can_run(why)) {
        WARN("skipped: " << why);
        return;
    }
    const fs::path dir = fresh_folder("translator_resume");
    const RemovedAtEnd cleanup{dir};
    const Result whole = train(dir / "whole", " --threads 2");
    INFO(whole.output);
    REQUIRE(whole.code == 0);
    CHECK_THAT(whole.output, Catch::Contains("epoch 3 of 3") && Catch::Contains("in 8 lanes") &&
                                 Catch::Contains("on 2 threads"));
    const std::string expected = read_file(dir / "whole/checkpoint.npz");
    REQUIRE(!expected.empty());

    // one thread writes the same bytes as two (the lanes are the same sums, whichever thread runs them)
    const Result one_thread = train(dir / "one_thread", " --threads 1");
    INFO(one_thread.output);
    REQUIRE(one_thread.code == 0);
    CHECK_THAT(one_thread.output, Catch::Contains("on 1 thread "));
    CHECK(read_file(dir / "one_thread/checkpoint.npz") == expected);

    // stopped after the first epoch, then resumed twice (one epoch, then the rest)
    const Result first = train(dir / "stopped", " --epochs-now 1");
    INFO(first.output);
    REQUIRE(first.code == 0);
    CHECK_THAT(first.output, Catch::Contains("stopped after epoch 1 of 3"));
    const std::string after_one = read_file(dir / "stopped/checkpoint.npz");
    CHECK(after_one != expected);
    CHECK(nlohmann::json::parse(parse_npz(after_one, "after one").front().bytes())["epochs_done"] == 1);
    const Result second = train(dir / "stopped", " --epochs-now 1");
    INFO(second.output);
    CHECK_THAT(second.output, Catch::Contains("resuming") && Catch::Contains("after epoch 1 of 3"));
    const Result rest = train(dir / "stopped");
    INFO(rest.output);
    REQUIRE(rest.code == 0);
    CHECK(read_file(dir / "stopped/checkpoint.npz") == expected);
    // its closing table of validation BLEU holds the epochs trained before it resumed, read back from the
    // checkpoint, as the uninterrupted run's does
    const auto table = [](const std::string& output) {  // the lines "  epoch E: a b c" after its heading
        std::string lines;
        std::istringstream in(output.substr(output.find("validation BLEU x 100")));
        for (std::string line; std::getline(in, line);)
            if (line.rfind("  epoch ", 0) == 0) lines += line + "\n";
        return lines;
    };
    REQUIRE(whole.output.find("validation BLEU x 100") != std::string::npos);
    REQUIRE(rest.output.find("validation BLEU x 100") != std::string::npos);
    CHECK(table(rest.output) == table(whole.output));
    CHECK_THAT(table(rest.output), Catch::Contains("  epoch 1: ") && Catch::Contains("  epoch 3: "));

    // killed (SIGKILL: no handler runs) as soon as its first checkpoint is there, then run again
    const fs::path killed = dir / "killed";
    const std::string command = attn_bin() + " train --out '" + killed.string() + "'" + small +
                                " > /dev/null 2>&1 & pid=$!; for i in $(seq 1 600); do "
                                "[ -e '" + (killed / "checkpoint.npz").string() + "' ] && break; sleep 0.05; done; "
                                "kill -9 $pid 2>/dev/null; wait $pid; echo \"exit $?\"";
    const Result interrupted = run_command(command);
    INFO(interrupted.output);
    const bool was_killed = interrupted.output.find("exit 137") != std::string::npos;
    if (!was_killed) WARN("the run ended before it could be killed: " << interrupted.output);
    // no temporary file left beside it, and what is there is a whole checkpoint
    for (const auto& entry : fs::directory_iterator(killed))
        CHECK(entry.path().filename() == "checkpoint.npz");
    CHECK_NOTHROW(read_npz(killed / "checkpoint.npz"));
    const Result resumed = train(killed);
    INFO(resumed.output);
    REQUIRE(resumed.code == 0);
    CHECK(read_file(killed / "checkpoint.npz") == expected);

    // another configuration in the same folder is refused, naming both
    const Result other = train(dir / "whole", " --set width=12");
    INFO(other.output);
    CHECK(other.code == 2);
    CHECK_THAT(other.output, Catch::Contains("another configuration") && Catch::Contains("width=12"));

    // --portable trains the lesson's way, other bytes; its checkpoint goes on only with --portable, and the
    // lanes' only without, before any training
    const Result portable = train(dir / "portable", " --portable --epochs-now 1");
    INFO(portable.output);
    REQUIRE(portable.code == 0);
    CHECK_THAT(portable.output, Catch::Contains("the lessons' way") && Catch::Contains("on 1 thread\n"));
    check_refused(dir / "portable", "", "resume it with --portable");
    check_refused(dir / "whole", " --portable", "resume it without --portable");
    CHECK(read_file(dir / "whole/checkpoint.npz") == expected);

    // --float32 multiplies in float32: its checkpoint says so, and goes on only with --float32
    const Result single = train(dir / "single", " --float32 --epochs-now 1");
    INFO(single.output);
    REQUIRE(single.code == 0);
    CHECK_THAT(single.output, Catch::Contains("float32 products"));
    const std::vector<NpzMember> single_members = read_npz(dir / "single/checkpoint.npz");
    CHECK(nlohmann::json::parse(single_members[0].bytes())["training"].get<std::string>().find("float32 products") !=
          std::string::npos);
    const std::string single_bytes = read_file(dir / "single/checkpoint.npz");
    check_refused(dir / "single", "", "resume it with --float32");
    check_refused(dir / "whole", " --float32", "resume it without --float32");
    CHECK(read_file(dir / "single/checkpoint.npz") == single_bytes);
    const Result both = train(dir / "both", " --float32 --portable");
    CHECK(both.code != 0);
    CHECK_THAT(both.output, Catch::Contains("--float32") && Catch::Contains("--portable"));
    CHECK(!fs::exists(dir / "both/checkpoint.npz"));

    // a checkpoint the earlier attn train wrote summing the Transformer's batches in lanes: neither way
    // goes on to its bytes, and both say so before any training
    std::vector<NpzMember> members = read_npz(dir / "whole/checkpoint.npz");
    REQUIRE(members[0].name == "attn.json");
    nlohmann::json description = nlohmann::json::parse(members[0].bytes());
    description["training"] = "in 8 lanes, fused products";
    members[0].content = description.dump();
    fs::create_directories(dir / "lanes");
    write_npz(dir / "lanes/checkpoint.npz", members);
    const std::string lanes_bytes = read_file(dir / "lanes/checkpoint.npz");
    for (const char* how : {"", " --portable"})
        check_refused(dir / "lanes", how,
                      "was trained in 8 lanes, fused products, which this attn train no longer does (it trains "
                      "stacked (Transformer) or in 8 lanes (GRU) or the lessons' way (one sum)): it cannot go on to "
                      "the bytes of a run never stopped; train into another --out");
    CHECK(read_file(dir / "lanes/checkpoint.npz") == lanes_bytes);
}

TEST_CASE("the checkpoint: attn.json names every tensor with its shape; SentencePiece loads its tokenizer",
          "[translator]") {
    std::string why;
    if (!can_run(why)) {
        WARN("skipped: " << why);
        return;
    }
    const fs::path dir = fresh_folder("translator_file");
    const RemovedAtEnd cleanup{dir};
    const Result trained = train(dir, " --set epochs=1");
    INFO(trained.output);
    REQUIRE(trained.code == 0);
    const std::vector<NpzMember> members = read_npz(dir / "checkpoint.npz");
    REQUIRE(members.size() > 2);
    REQUIRE(members[0].name == "attn.json");
    REQUIRE(members[1].name == "tokenizer.model");
    const nlohmann::json description = nlohmann::json::parse(members[0].bytes());
    CHECK(description["format"] == "attn translator checkpoint");
    CHECK(description["format_version"] == 1);
    CHECK(description["settings"]["width"] == 8);
    CHECK(description["epochs_done"] == 1);
    // how it was trained: fast (attn train's default: the Transformer's batch stacked, the GRUs' in 8 lanes),
    // which a resume must match
    CHECK(description["gradient_lanes"] == 8);
    CHECK(description["training"].get<std::string>().rfind("stacked (Transformer) or in 8 lanes (GRU), ", 0) == 0);
    // the validation BLEU of each model after the epoch: a score in [0, 100] per model, the one printed
    const nlohmann::json& bleu = description["validation_bleu"]["by_epoch"];
    REQUIRE(bleu.size() == 1);
    REQUIRE(bleu[0].size() == 3);
    std::string printed;
    for (const auto& x : bleu[0]) {
        REQUIRE(x.is_number());
        CHECK(x.get<double>() >= 0.0);
        CHECK(x.get<double>() <= 100.0);
        printed += (printed.empty() ? "" : " ") + fmt::format("{:.2f}", x.get<double>());
    }
    CHECK_THAT(trained.output, Catch::Contains("; validation BLEU " + printed + "; saved"));
    CHECK_THAT(trained.output, Catch::Contains("  epoch 1: " + printed));
    const text::Tokenizer tokenizer(members[1].bytes());
    CHECK(description["vocabulary"] == tokenizer.size());
    // every array member listed once, with its shape, and nothing listed that is not there
    std::size_t arrays = 0;
    for (const NpzMember& m : members) {
        if (!m.is_array()) continue;
        ++arrays;
        bool listed = false;
        for (const auto& t : description["tensors"])
            if (t["name"] == m.name + ".npy") {
                listed = true;
                CHECK(t["shape"].get<std::vector<std::size_t>>() ==
                      std::vector<std::size_t>(m.array().shape().begin(), m.array().shape().end()));
                CHECK_FALSE(t["role"].get<std::string>().empty());
            }
        INFO(m.name);
        CHECK(listed);
    }
    CHECK(description["tensors"].size() == arrays);
    // the output layers are V x width: the three models read and write the tokenizer's pieces
    for (const NpzMember& m : members)
        if (m.name == "without.W_o" || m.name == "with.W_o" || m.name == "transformer.W_o")
            CHECK(m.array().shape()[0] == static_cast<std::size_t>(tokenizer.size()));
}

TEST_CASE("attn translate translates with a checkpoint and refuses bad input and bad files by name",
          "[translator]") {
    std::string why;
    if (!can_run(why)) {
        WARN("skipped: " << why);
        return;
    }
    const fs::path dir = fresh_folder("translator_translate");
    const RemovedAtEnd cleanup{dir};
    const fs::path model = dir / "model";
    REQUIRE(train(model, " --set epochs=1").code == 0);
    const std::string translate = attn_bin() + " translate --model '" + model.string() + "'";

    const Result one = run_command(translate + " 'In the beginning was the Word.' 2>&1");
    INFO(one.output);
    CHECK(one.code == 0);
    CHECK_THAT(one.output, Catch::Contains("pieces: _I n _the _be") && Catch::Contains("attention  [") &&
                               Catch::Contains("by the Transformer, greedy") &&
                               Catch::Contains("(trained 1 of 1 epochs)"));
    const Result beam = run_command(translate + " --beam 3 'And Jesus wept.' 2>&1");
    INFO(beam.output);
    CHECK(beam.code == 0);
    CHECK_THAT(beam.output, Catch::Contains("beam search of width 3"));
    for (const std::string which : {"with", "without"}) {
        const Result gru = run_command(translate + " --with " + which + " 'And Jesus wept.' 2>&1");
        INFO(gru.output);
        CHECK(gru.code == 0);
        CHECK_THAT(gru.output, Catch::Contains(which == "with" ? "alpha of the GRU with attention" : "pieces:"));
    }
    const Result lines = run_command("printf 'In the beginning.\\n\\nJesus wept.\\n' | " + translate + " --stdin 2>&1");
    INFO(lines.output);
    CHECK(lines.code == 2);  // one line of three was empty
    CHECK_THAT(lines.output, Catch::Contains("line 2: it is empty"));
    CHECK_THAT(lines.output, !Catch::Contains("line 1:") && !Catch::Contains("line 3:"));

    const Result unknown = run_command(translate + " 'Jesus \xce\xa9 wept' 2>&1");
    INFO(unknown.output);
    CHECK(unknown.code == 2);
    CHECK_THAT(unknown.output, Catch::Contains("the characters \xce\xa9 are not in the model's vocabulary"));
    std::string long_sentence;
    for (int k = 0; k < 300; ++k) long_sentence += "beginning ";
    const Result overlong = run_command(translate + " '" + long_sentence + "' 2>&1");
    INFO(overlong.output);
    CHECK(overlong.code == 2);
    CHECK_THAT(overlong.output, Catch::Contains("pieces long, above the 400 this command takes"));
    CHECK(run_command(translate + " --with with --beam 2 'x' 2>&1").code == 2);
    CHECK(run_command(translate + " 2>&1").code == 2);  // nothing to translate

    // files: missing, cut short, another format version
    const Result missing = run_command(attn_bin() + " translate --model '" + (dir / "none").string() + "' x 2>&1");
    CHECK(missing.code == 3);
    CHECK_THAT(missing.output, Catch::Contains("cannot open"));
    const std::string bytes = read_file(model / "checkpoint.npz");
    write_bytes(dir / "cut.npz", bytes.substr(0, bytes.size() / 2));
    const Result cut = run_command(attn_bin() + " translate --model '" + (dir / "cut.npz").string() + "' x 2>&1");
    INFO(cut.output);
    CHECK(cut.code == 3);
    CHECK_THAT(cut.output, Catch::Contains("cut.npz"));
    std::vector<NpzMember> members = parse_npz(bytes, "model");
    nlohmann::ordered_json description = nlohmann::ordered_json::parse(members[0].bytes());
    description["format_version"] = 2;
    members[0].content = description.dump(1);
    write_bytes(dir / "future.npz", to_npz(members));
    const Result future = run_command(attn_bin() + " translate --model '" + (dir / "future.npz").string() + "' x 2>&1");
    INFO(future.output);
    CHECK(future.code == 3);
    CHECK_THAT(future.output, Catch::Contains("format version 2, which this attn does not read"));
    // a weight of another shape is named
    for (NpzMember& m : members)
        if (m.name == "with.W_o") m.content = Array(xt::zeros<double>({std::size_t{3}, std::size_t{3}}));
    description["format_version"] = 1;
    members[0].content = description.dump(1);
    write_bytes(dir / "reshaped.npz", to_npz(members));
    const Result reshaped =
        run_command(attn_bin() + " translate --model '" + (dir / "reshaped.npz").string() + "' x 2>&1");
    INFO(reshaped.output);
    CHECK(reshaped.code == 3);
    CHECK_THAT(reshaped.output, Catch::Contains("with.W_o has shape [3, 3]"));
}

TEST_CASE("attn train refuses a long run without --long, and bad settings, before any work", "[translator]") {
    const Result full = run_command(attn_bin() + " train --out /nonexistent/never --full 2>&1");
    INFO(full.output);
    CHECK(full.code == 2);
    CHECK_THAT(full.output, Catch::Contains("would train for about") && Catch::Contains("add --long"));
    CHECK_FALSE(fs::exists("/nonexistent/never"));
    const Result bad = run_command(attn_bin() + " train --out /nonexistent/never --set widht=3 2>&1");
    INFO(bad.output);
    CHECK(bad.code == 2);
    CHECK_THAT(bad.output, Catch::Contains("'widht'") && Catch::Contains("did you mean 'width'?"));
    // --portable trains on one thread: asking for threads as well is a mistake, and so is no thread
    for (const char* threads : {" --portable --threads 2", " --threads 0"}) {
        const Result refused = run_command(attn_bin() + " train --out /nonexistent/never" + threads + " 2>&1");
        INFO(refused.output);
        CHECK(refused.code == 2);
        CHECK_THAT(refused.output, Catch::Contains("--threads"));
    }
    CHECK_FALSE(fs::exists("/nonexistent/never"));
}

}  // namespace test_translator
