// Real text for lesson 14: Bible verses in English and Spanish, read from Debian's SWORD modules
// (sword-text-kjv: the King James Version, module engKJV2006eb; sword-text-sparv: the Reina-Valera
// of 1909, module spaRV1909eb; both public domain, both in the KJV versification), and aligned by
// verse reference. attn does not link the SWORD library (GPL-2): it runs SWORD's own exporter,
// mod2imp (package libsword-utils), and reads what it prints, the module's stored OSIS markup.
//
//   mod2imp's output:  $$$Genesis 1:1            a key line, then the entry's text
//                      In the <w lemma="strong:H7225">beginning</w> ...
//
// Cleaning (clean_osis) keeps the words a reader sees and nothing else: footnotes and
// cross-references, Strong's numbers (they are attributes of <w>), section headings and the
// pilcrows (¶) go; the words of <w>, <transChange> (the printed italics), <q> and <divineName>
// stay, with the case the module stores.
#pragma once

#include <cstddef>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace attn::text {

struct BibleError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// One verse: its reference as SWORD names it in English ("Genesis 1:1", "I Samuel 3:4"), whatever
// the module's language, and its text.
struct Verse {
    std::string ref;
    std::string text;
};

// The book of a reference: "I Samuel" for "I Samuel 3:4". Throws BibleError when the reference is not
// "Book C:V" (as parse_imp reads keys).
std::string book_of(std::string_view ref);

// The verses of mod2imp's output, in its order: the entries whose key has a chapter and a verse
// above 0 (SWORD's book and chapter introductions, "Genesis 0:0" and "Genesis 1:0", are left out).
// An entry's lines are joined by a space. Throws BibleError naming `source` and the line for text
// before the first key, a key that is not "Book C:V", or a reference given twice.
std::vector<Verse> parse_imp(std::string_view imp, const std::string& source);

// The words of one entry's OSIS markup, cleaned as the header says:
//   <note>...</note>           a space (footnotes, cross-references and what they hold)
//   <title>...</title>         dropped, unless canonical="true" and keep_titles (the psalms'
//                              superscriptions, which the Spanish module has as words of verse 1)
//   <speaker>...</speaker>     dropped (the speakers' labels of the Song of Songs)
//   <div type="book" eID=..>   the end of the book: the rest of the entry is dropped (a module may
//                              append a glossary to the last verse)
//   <w>, <transChange>, <q>, <divineName>, <seg>, <hi>, <foreign>, <rdg> and their closing tags:
//                              nothing (their words stay, joined as written)
//   every other tag            a space (<l>, <lg>, <lb>, <p>, <div>, <milestone>, <chapter>, ...)
//   \nd, \nd*, \+nd, \+nd*     dropped (USFM markers left in some entries)
//   &amp; &lt; &gt; &quot; &apos;  decoded
//   ¶ (U+00B6)                 dropped
// then runs of whitespace become one space, trimmed at both ends. Throws BibleError for a tag
// left open at the end of the text (a "<" without its ">"), or a note, title or speaker not closed.
std::string clean_osis(std::string_view osis, bool keep_titles);

// The module's raw text as mod2imp prints it. mod2imp runs with a fixed environment (HOME an empty
// folder, no SWORD_PATH, LC_ALL=C.UTF-8), so that no user's ~/.sword or SWORD_PATH can put another
// module in the place of the one named. Throws BibleError naming the package to install when
// mod2imp is missing (libsword-utils) or does not find the module (`package`).
std::string module_imp(const std::string& module, const std::string& package);

// The modules lesson 14 reads, and what each must hold.
struct ModuleSpec {
    std::string module;          // SWORD's name (mods.d/<module>.conf)
    std::string package;         // the Debian package that installs it
    std::string language;        // "English", "Spanish"
    std::size_t verses = 0;      // verses its output must hold: 31102 in the KJV versification
};
const ModuleSpec& english_module();  // engKJV2006eb, sword-text-kjv
const ModuleSpec& spanish_module();  // spaRV1909eb, sword-text-sparv

// The install command for everything lesson 14 reads, for messages.
std::string install_command();

// One module's verses, cleaned (keep_titles for the English side: see clean_osis); throws
// BibleError when the count is not spec.verses (another edition of the module, or a damaged one).
std::vector<Verse> read_module(const ModuleSpec& spec, bool keep_titles);

// A verse in both languages.
struct VersePair {
    std::string ref, en, es;
};

// What aligning dropped, by reason.
struct AlignCounts {
    std::size_t english = 0, spanish = 0;  // verses read
    std::size_t only_english = 0;          // references the Spanish side lacks
    std::size_t only_spanish = 0;          // and the other way round
    std::size_t empty = 0;                 // references whose text is empty on either side
    std::size_t kept = 0;
};

// The pairs of verses with the same reference and words on both sides, in the English order.
std::vector<VersePair> align_by_reference(const std::vector<Verse>& en, const std::vector<Verse>& es,
                                          AlignCounts& counts);

}  // namespace attn::text
