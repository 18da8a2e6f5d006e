#include "text/bible.hpp"

#include <fmt/format.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>
#include <unordered_map>

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

namespace attn::text {

namespace {

bool is_digits(std::string_view s) {
    return !s.empty() && s.size() <= 4 && s.find_first_not_of("0123456789") == std::string_view::npos;
}

// "Book C:V" -> chapter and verse; false when the key is not of that form.
bool split_key(std::string_view key, std::size_t& chapter, std::size_t& verse) {
    const std::size_t space = key.rfind(' ');
    if (space == std::string_view::npos || space == 0) return false;
    const std::string_view cv = key.substr(space + 1);
    const std::size_t colon = cv.find(':');
    if (colon == std::string_view::npos) return false;
    const std::string_view c = cv.substr(0, colon), v = cv.substr(colon + 1);
    if (!is_digits(c) || !is_digits(v)) return false;
    chapter = std::stoul(std::string(c));
    verse = std::stoul(std::string(v));
    return true;
}

// The value of attribute `name` in the tag text `tag` ("<title canonical=\"true\" ...>"), or "".
std::string attribute(std::string_view tag, std::string_view name) {
    std::size_t at = 0;
    while ((at = tag.find(name, at)) != std::string_view::npos) {
        const bool starts = at > 0 && (tag[at - 1] == ' ' || tag[at - 1] == '\t');
        const std::size_t eq = at + name.size();
        if (starts && eq + 1 < tag.size() && tag[eq] == '=' && (tag[eq + 1] == '"' || tag[eq + 1] == '\'')) {
            const char quote = tag[eq + 1];
            const std::size_t end = tag.find(quote, eq + 2);
            if (end == std::string_view::npos) return "";
            return std::string(tag.substr(eq + 2, end - eq - 2));
        }
        at = eq;
    }
    return "";
}

// The element name of a tag's text without its angle brackets: "w" for "w lemma=..", "/w", "l/"'s "l".
std::string_view element_name(std::string_view inside) {
    std::size_t start = inside.size() > 0 && inside[0] == '/' ? 1 : 0;
    std::size_t end = start;
    while (end < inside.size() && inside[end] != ' ' && inside[end] != '\t' && inside[end] != '/' &&
           inside[end] != '\n')
        ++end;
    return inside.substr(start, end - start);
}

bool inline_element(std::string_view name) {
    static const std::array<std::string_view, 8> names = {"w",  "transChange", "q",       "divineName",
                                                          "seg", "hi",         "foreign", "rdg"};
    for (const auto n : names)
        if (n == name) return true;
    return false;
}

// The length of what `finished` drops or decodes at s[i], and what it becomes: an entity, a USFM
// marker (\nd \nd* \+nd \+nd*) or the pilcrow (U+00B6, two bytes in UTF-8); 0 when none starts there.
std::size_t replaced_at(const std::string& s, std::size_t i, std::string& by) {
    static const std::array<std::pair<std::string_view, std::string_view>, 10> table = {{{"&amp;", "&"},
                                                                                        {"&lt;", "<"},
                                                                                        {"&gt;", ">"},
                                                                                        {"&quot;", "\""},
                                                                                        {"&apos;", "'"},
                                                                                        {"\\+nd*", ""},
                                                                                        {"\\+nd", ""},
                                                                                        {"\\nd*", ""},
                                                                                        {"\\nd", ""},
                                                                                        {"\xc2\xb6", ""}}};
    for (const auto& [from, to] : table)
        if (s.compare(i, from.size(), from) == 0) {
            by = to;
            return from.size();
        }
    return 0;
}

// The words after the markup is gone: entities decoded, USFM markers and pilcrows dropped,
// whitespace collapsed.
std::string finished(const std::string& s) {
    std::string decoded, by;
    decoded.reserve(s.size());
    for (std::size_t i = 0; i < s.size();) {
        // every entry of replaced_at's table starts with one of these bytes: the others are copied as they are
        const char c = s[i];
        const bool may_start = c == '&' || c == '\\' || c == '\xc2';
        if (const std::size_t n = may_start ? replaced_at(s, i, by) : 0; n > 0) {
            decoded += by;
            i += n;
        } else {
            decoded += s[i++];
        }
    }
    std::string out;
    bool space = false;
    for (const char c : decoded) {
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
            space = !out.empty();
            continue;
        }
        if (space) out += ' ';
        space = false;
        out += c;
    }
    return out;
}

}  // namespace

std::string book_of(std::string_view ref) {
    std::size_t chapter = 0, verse = 0;
    if (!split_key(ref, chapter, verse))
        throw BibleError(fmt::format("\"{}\" is not a verse reference (Book C:V)", ref));
    return std::string(ref.substr(0, ref.rfind(' ')));
}

std::vector<Verse> parse_imp(std::string_view imp, const std::string& source) {
    std::vector<Verse> verses;
    std::set<std::string> seen;
    bool in_verse = false, any_key = false;
    std::size_t line_number = 0, start = 0;
    while (start < imp.size()) {
        std::size_t end = imp.find('\n', start);
        if (end == std::string_view::npos) end = imp.size();
        std::string_view line = imp.substr(start, end - start);
        start = end + 1;
        ++line_number;
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (line.rfind("$$$", 0) == 0) {
            any_key = true;
            const std::string_view key = line.substr(3);
            if (key.size() > 2 && key.front() == '[' && key.back() == ']') {  // "[ Module Heading ]"
                in_verse = false;
                continue;
            }
            std::size_t chapter = 0, verse = 0;
            if (!split_key(key, chapter, verse))
                throw BibleError(fmt::format("{}, line {}: the key \"{}\" is not a reference \"Book chapter:verse\"",
                                             source, line_number, std::string(key.substr(0, 80))));
            in_verse = chapter > 0 && verse > 0;
            if (!in_verse) continue;
            if (!seen.insert(std::string(key)).second)
                throw BibleError(fmt::format("{}, line {}: the verse {} comes twice", source, line_number,
                                             std::string(key)));
            verses.push_back({std::string(key), ""});
            continue;
        }
        if (!any_key) {
            if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
            throw BibleError(fmt::format("{}, line {}: text before the first key ($$$Book chapter:verse)", source,
                                         line_number));
        }
        if (!in_verse) continue;
        std::string& text = verses.back().text;
        if (!text.empty() && !line.empty()) text += ' ';
        text += line;
    }
    return verses;
}

std::string clean_osis(std::string_view osis, bool keep_titles) {
    std::string out;
    out.reserve(osis.size());
    std::size_t i = 0;
    // the element being skipped with its content (note, title, speaker) and how deeply it nests
    std::string skipping;
    int depth = 0;
    while (i < osis.size()) {
        if (osis[i] != '<') {
            if (skipping.empty()) out += osis[i];
            ++i;
            continue;
        }
        const std::size_t close = osis.find('>', i);
        if (close == std::string_view::npos)
            throw BibleError(fmt::format("a tag left open at byte {}: \"{}\"", i,
                                         std::string(osis.substr(i, std::min<std::size_t>(40, osis.size() - i)))));
        const std::string_view inside = osis.substr(i + 1, close - i - 1);
        i = close + 1;
        const bool closing = !inside.empty() && inside.front() == '/';
        const bool empty_element = !inside.empty() && inside.back() == '/';
        const std::string_view name = element_name(inside);
        if (!skipping.empty()) {
            if (name == skipping && !empty_element) depth += closing ? -1 : 1;
            if (depth == 0) {
                skipping.clear();
                out += ' ';
            }
            continue;
        }
        if (name == "div" && attribute(inside, "type") == "book" && !attribute(inside, "eID").empty()) break;
        if (!closing && !empty_element &&
            (name == "note" || name == "speaker" ||
             (name == "title" && !(keep_titles && attribute(inside, "canonical") == "true")))) {
            skipping = std::string(name);
            depth = 1;
            continue;
        }
        out += inline_element(name) ? "" : " ";
    }
    if (!skipping.empty()) throw BibleError("a <" + skipping + "> is not closed");
    return finished(out);
}

const ModuleSpec& english_module() {
    static const ModuleSpec spec{"engKJV2006eb", "sword-text-kjv", "English", 31102};
    return spec;
}

const ModuleSpec& spanish_module() {
    static const ModuleSpec spec{"spaRV1909eb", "sword-text-sparv", "Spanish", 31102};
    return spec;
}

std::string install_command() {
    return "apt-get install libsword-utils sword-text-kjv sword-text-sparv (or bash .ci/install-deps)";
}

namespace {

// Runs argv with `env` and returns its standard output; `err` gets its standard error and `code`
// its exit status (-1 when a signal ended it).
std::string captured(const std::vector<std::string>& argv, const std::vector<std::string>& env, std::string& err,
                     int& code) {
    int out_pipe[2], err_pipe[2];
    if (::pipe2(out_pipe, O_CLOEXEC) != 0) throw BibleError(std::string("cannot make a pipe: ") + std::strerror(errno));
    if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
        ::close(out_pipe[0]);
        ::close(out_pipe[1]);
        throw BibleError(std::string("cannot make a pipe: ") + std::strerror(errno));
    }
    std::vector<char*> args, envp;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
    const pid_t pid = ::fork();
    if (pid < 0) {
        const int error = errno;
        for (const int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) ::close(fd);
        throw BibleError(std::string("cannot start ") + argv[0] + ": " + std::strerror(error));
    }
    if (pid == 0) {
        ::dup2(out_pipe[1], STDOUT_FILENO);
        ::dup2(err_pipe[1], STDERR_FILENO);
        const int null = ::open("/dev/null", O_RDONLY);
        if (null >= 0) ::dup2(null, STDIN_FILENO);
        ::execve(args[0], args.data(), envp.data());
        ::_exit(127);
    }
    ::close(out_pipe[1]);
    ::close(err_pipe[1]);
    std::string out;
    // both pipes read as they fill (the exporter writes megabytes to standard output, a line or two
    // to standard error), standard error kept to 64 KiB
    std::array<char, 65536> buffer{};
    std::array<pollfd, 2> fds = {{{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}}};
    int open_pipes = 2;
    while (open_pipes > 0) {
        if (::poll(fds.data(), fds.size(), -1) < 0) {
            if (errno == EINTR) continue;
            break;
        }
        for (std::size_t k = 0; k < fds.size(); ++k) {
            if (fds[k].fd < 0 || fds[k].revents == 0) continue;
            const ssize_t n = ::read(fds[k].fd, buffer.data(), buffer.size());
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) {
                ::close(fds[k].fd);
                fds[k].fd = -1;
                --open_pipes;
                continue;
            }
            std::string& into = k == 0 ? out : err;
            if (k == 0 || err.size() < 65536) into.append(buffer.data(), static_cast<std::size_t>(n));
        }
    }
    for (const auto& f : fds)
        if (f.fd >= 0) ::close(f.fd);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return out;
}

}  // namespace

std::string module_imp(const std::string& module, const std::string& package) {
    const std::string exporter = "/usr/bin/mod2imp";
    if (::access(exporter.c_str(), X_OK) != 0)
        throw BibleError(fmt::format("{} is missing: lessons 14 and 15 read the Bible's text with SWORD's exporter, "
                                     "from the package libsword-utils; install it: {}",
                                     exporter, install_command()));
    // an empty home, so that no ~/.sword of the user's adds or replaces a module
    std::error_code ec;
    std::string home_template = (std::filesystem::temp_directory_path(ec) / "attn-sword-XXXXXX").string();
    if (ec) home_template = "/tmp/attn-sword-XXXXXX";
    const char* home = ::mkdtemp(home_template.data());
    if (!home) throw BibleError(std::string("cannot make a temporary folder: ") + std::strerror(errno));
    std::string err;
    int code = 0;
    std::string out;
    try {
        out = captured({exporter, module}, {"HOME=" + std::string(home), "LC_ALL=C.UTF-8", "PATH=/usr/bin:/bin"}, err,
                       code);
    } catch (...) {
        std::filesystem::remove_all(home, ec);
        throw;
    }
    std::filesystem::remove_all(home, ec);
    if (err.find("Couldn't find module") != std::string::npos || (code == 0 && out.empty()))
        throw BibleError(fmt::format("the SWORD module {} is not installed: it comes with the package {}; install "
                                     "it: {}",
                                     module, package, install_command()));
    if (code != 0)
        throw BibleError(fmt::format("{} {} failed (exit {}): {}", exporter, module, code, err.substr(0, 500)));
    return out;
}

std::vector<Verse> read_module(const ModuleSpec& spec, bool keep_titles) {
    const std::string source = "mod2imp " + spec.module;
    std::vector<Verse> verses = parse_imp(module_imp(spec.module, spec.package), source);
    if (verses.size() != spec.verses)
        throw BibleError(fmt::format("{} gave {} verses, not the {} of the {} module this lesson was written for "
                                     "(Debian 12's {}): another edition, or a damaged one",
                                     source, verses.size(), spec.verses, spec.language, spec.package));
    for (Verse& v : verses) {
        try {
            v.text = clean_osis(v.text, keep_titles);
        } catch (const BibleError& e) {
            throw BibleError(fmt::format("{}, {}: {}", source, v.ref, e.what()));
        }
    }
    return verses;
}

std::vector<VersePair> align_by_reference(const std::vector<Verse>& en, const std::vector<Verse>& es,
                                          AlignCounts& counts) {
    counts = AlignCounts{};
    counts.english = en.size();
    counts.spanish = es.size();
    std::unordered_map<std::string, const Verse*> spanish;
    for (const Verse& v : es) spanish.emplace(v.ref, &v);
    std::set<std::string> english;
    std::vector<VersePair> pairs;
    for (const Verse& v : en) {
        english.insert(v.ref);
        const auto found = spanish.find(v.ref);
        if (found == spanish.end()) {
            ++counts.only_english;
            continue;
        }
        if (v.text.empty() || found->second->text.empty()) {
            ++counts.empty;
            continue;
        }
        pairs.push_back({v.ref, v.text, found->second->text});
    }
    for (const Verse& v : es)
        if (!english.count(v.ref)) ++counts.only_spanish;
    counts.kept = pairs.size();
    return pairs;
}

}  // namespace attn::text
