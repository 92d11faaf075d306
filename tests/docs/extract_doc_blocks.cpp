// Writes the ```cpp blocks of one Markdown file into one C++ translation unit,
// so that the build compiles every code block of the documentation and the
// docs.blocks.* tests run the ones that are whole programs.
//
//   extract_doc_blocks <file.md> <name shown in messages> <group> <out.cpp>
//
// Rules, read off the line before each ```cpp fence (blank lines skipped; a
// marker must be followed by its block):
//   <!-- fragment -->            not compiled: the block is deliberately partial
//   <!-- example-begin NAME -->  not compiled here: examples/CMakeLists.txt builds it
//   <!-- needs: mpi -->          goes to the `mpi` group (built with plait::mpi, run under mpiexec)
//   anything else                goes to the `plain` group
// A block must compile at namespace scope. `#include` lines are hoisted to
// the top; the rest goes into its own namespace, with #line directives so
// that a compiler error names the Markdown file and line. A block with
// `int main(` is a program: its main is renamed, and the generated main runs
// every program of the file in order and fails if one returns non-zero.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct block {
  int first_line = 0;  // the line after the opening fence
  std::vector<std::string> lines;
  bool program = false;
};

std::string trimmed(const std::string& s) {
  const auto begin = s.find_first_not_of(" \t\r");
  if (begin == std::string::npos) return {};
  const auto end = s.find_last_not_of(" \t\r");
  return s.substr(begin, end - begin + 1);
}

std::string group_of(const std::string& marker) {
  if (marker == "<!-- fragment -->" || marker.rfind("<!-- example-begin ", 0) == 0) return "skip";
  if (marker == "<!-- needs: mpi -->") return "mpi";
  return "plain";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::cerr << "usage: extract_doc_blocks <file.md> <display name> <plain|mpi> <out.cpp>\n";
    return 2;
  }
  const std::string source = argv[1];
  const std::string shown = argv[2];
  const std::string wanted = argv[3];
  std::ifstream in(source);
  if (!in) {
    std::cerr << "extract_doc_blocks: cannot read " << source << "\n";
    return 1;
  }

  std::vector<block> blocks;
  std::string line;
  std::string previous;  // the last non-blank line outside a block
  int number = 0;
  bool inside = false;
  bool keep = false;
  while (std::getline(in, line)) {
    ++number;
    const std::string t = trimmed(line);
    if (!inside) {
      if (t == "```cpp" || t == "```c++") {
        inside = true;
        keep = group_of(previous) == wanted;
        if (keep) blocks.push_back(block{number + 1, {}, false});
      } else if (!t.empty()) {
        // A marker belongs to the block right after it: one left dangling
        // would make tests/docs/CMakeLists.txt count the groups wrong.
        if (group_of(previous) != "plain" && previous.rfind("<!-- example-begin ", 0) != 0) {
          std::cerr << shown << ":" << number << ": `" << previous << "` must come right before a ```cpp block\n";
          return 1;
        }
        previous = t;
      }
      continue;
    }
    if (t == "```") {
      inside = false;
      previous.clear();
      continue;
    }
    if (keep) {
      blocks.back().lines.push_back(line);
      if (line.find("int main(") != std::string::npos) blocks.back().program = true;
    }
  }
  if (inside) {
    std::cerr << shown << ":" << number << ": a ```cpp block is not closed\n";
    return 1;
  }

  std::ostringstream out;
  out << "// Generated from " << shown << " by tests/docs/extract_doc_blocks.cpp; edit " << shown << ".\n";
  std::set<std::string> includes;
  for (const block& b : blocks) {
    for (const std::string& l : b.lines) {
      if (trimmed(l).rfind("#include", 0) == 0 && includes.insert(trimmed(l)).second) out << trimmed(l) << "\n";
    }
  }
  out << "#include <cstdio>\n\n";
  for (const block& b : blocks) {
    out << "namespace doc_block_" << b.first_line << " {\n";
    if (b.program) out << "#define main doc_main\n";
    int at = b.first_line;
    for (const std::string& l : b.lines) {
      if (trimmed(l).rfind("#include", 0) == 0) {
        out << "\n";  // hoisted; keeps the line numbers
      } else {
        out << "#line " << at << " \"" << shown << "\"\n" << l << "\n";
      }
      ++at;
    }
    if (b.program) out << "#undef main\n";
    out << "}  // namespace doc_block_" << b.first_line << "\n\n";
  }
  out << "namespace {\n"
         "template <class F>\n"
         "int run_block(F f, int argc, char** argv) {\n"
         "  if constexpr (requires { f(argc, argv); }) {\n"
         "    return f(argc, argv);\n"
         "  } else {\n"
         "    return f();\n"
         "  }\n"
         "}\n"
         "}  // namespace\n\n"
         "int main(int argc, char** argv) {\n"
         "  int failed = 0;\n";
  for (const block& b : blocks) {
    if (!b.program) continue;
    out << "  if (const int rc = run_block(doc_block_" << b.first_line << "::doc_main, argc, argv); rc != 0) {\n"
        << "    std::fprintf(stderr, \"" << shown << ":" << b.first_line << ": the program returned %d\\n\", rc);\n"
        << "    ++failed;\n"
        << "  }\n";
  }
  out << "  (void)argc;\n  (void)argv;\n  return failed == 0 ? 0 : 1;\n}\n";

  // Rewrite only on change, so that editing prose does not rebuild the block.
  const std::string text = out.str();
  {
    std::ifstream old(argv[4]);
    std::stringstream current;
    current << old.rdbuf();
    if (old && current.str() == text) return 0;
  }
  std::ofstream file(argv[4]);
  file << text;
  return file ? 0 : 1;
}
