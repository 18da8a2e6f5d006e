// `attn run <lesson> --input FILE|DIR`: the user's own tensors, by name, in place of the inputs
// and parameters a lesson draws from its seed.
#pragma once

#include "tensor.hpp"

#include <filesystem>
#include <map>
#include <string>

namespace attn {

// The tensors of a golden-format JSON file (any subset of steps and tensors, as `attn compare`
// reads), keyed "<step>.<tensor>", or of a directory of `<tensor>.npy` or `<step>.<tensor>.npy`
// files, keyed by the file name without ".npy". Export-only data is skipped (tensors marked
// "export_only" in JSON, the data/ folder of an npy export): a lesson hands it out, never takes
// it. Throws GoldenError naming the file when it cannot be read or parsed, or holds no tensor. (Trace::input matches them to the lesson's inputs and checks their shapes.)
std::map<std::string, Array> read_inputs(const std::filesystem::path& path);

}  // namespace attn
