// "Did you mean": the known name a mistyped one most likely meant (lessons, steps, keys, commands).
#pragma once

#include <string>
#include <vector>

namespace attn {

// The candidate `name` most likely meant (one it begins, or one at most 2 edits away), or "".
std::string closest_name(const std::string& name, const std::vector<std::string>& candidates);

}  // namespace attn
