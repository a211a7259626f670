//! list_code_definition_names through the whole pipeline: outlines of real source files in all fourteen
//! languages and of files of this repository, compared with outlines written out by hand; Cline's limits,
//! `.clineignore`, and the errors for a file path, a missing directory and a directory without source files.

use crate::util::*;
use serde_json::json;
use std::path::Path;
use toolshed::ResultStatus;

/// The fixtures, committed under host-tests/data/outline.
fn data(dir: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data/outline").join(dir)
}

/// Copies a fixture directory into `to` (the tool reads inside the task's workspace, where reads need no ask).
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

/// One runtime and task in `ws`, and a function that outlines a directory in it.
fn outliner(ws: &Path) -> impl Fn(&str) -> toolshed::ToolResult + use<> {
    // These tests are about what an outline says, not its time limit: a debug build on two loaded cores once took
    // longer than the default 5 s for the Swift file.
    let config = "[plugins.config.list_code_definition_names]\nmax_file_ms = 600000\n";
    let runtime = shipped().config(toolshed::Config::from_toml_str(config).unwrap()).build().unwrap();
    let task = task_in(&runtime, ws);
    move |path| {
        let _runtime = &runtime;
        call(&task, "list_code_definition_names", json!({ "path": path }))
    }
}

fn tool_error(message: &str) -> String {
    format!("The tool execution failed with the following error:\n<error>\n{message}\n</error>")
}

/// One small file per language (JavaScript, TypeScript, TSX, Python, Rust, Go, C, C++, C#, Ruby, Java, PHP,
/// Swift, Kotlin; `.h` and `.hpp` too), in name order. Duplicated lines are Cline's queries at work: a Rust
/// function in an `impl` is both a method and a function, and a Swift member matches the class-body pattern
/// and the plain one.
const LANGS: &str = "Main.java\n\
|----\n\
│public class Main {\n\
│    interface Visitor {\n\
│        void visit(String item);\n\
|----\n\
│    public static void main(String[] args) {\n\
|----\n\
│    void walk(Visitor visitor) {\n\
|----\n\
\n\
Main.kt\n\
|----\n\
│typealias Name = String\n\
|----\n\
│interface Greeter {\n\
│    fun greet(name: Name): String\n\
|----\n\
│enum class Mood { HAPPY, SAD }\n\
|----\n\
│data class Person(val name: Name, val mood: Mood)\n\
|----\n\
│object Registry {\n\
│    val people = mutableListOf<Person>()\n\
|----\n\
│    fun add(person: Person) {\n\
|----\n\
│fun main() {\n\
|----\n\
\n\
Program.cs\n\
|----\n\
│namespace Demo\n\
|----\n\
│    public interface IGreeter\n\
|----\n\
│        string Greet(string name);\n\
|----\n\
│    public class Greeter : IGreeter\n\
|----\n\
│        public string Greet(string name)\n\
|----\n\
│        private static void Main(string[] args)\n\
|----\n\
\n\
Shapes.swift\n\
|----\n\
│protocol Shape {\n\
|----\n\
│struct Square: Shape {\n\
│    let side: Double\n\
│    let side: Double\n\
|----\n\
│    func area() -> Double {\n\
│    func area() -> Double {\n\
|----\n\
│class Canvas {\n\
│    var shapes: [Shape] = []\n\
│    var shapes: [Shape] = []\n\
|----\n\
│    init() {}\n\
|----\n\
│    deinit {\n\
|----\n\
│    subscript(index: Int) -> Shape {\n\
|----\n\
│let unit = Square(side: 1)\n\
|----\n\
│func total(_ shapes: [Shape]) -> Double {\n\
|----\n\
\n\
app.js\n\
|----\n\
│class Shape {\n\
|----\n\
│  area() {\n\
|----\n\
│function* ids() {\n\
|----\n\
│export function describe(shape) {\n\
|----\n\
│const double = (x) => x * 2;\n\
│var legacy = function (a) {\n\
|----\n\
\n\
index.php\n\
|----\n\
│function greet(string $name): string\n\
|----\n\
│class Controller\n\
|----\n\
│    public function handle(string $path): string\n\
|----\n\
│    public static function make(): self\n\
|----\n\
\n\
lib.rs\n\
|----\n\
│pub struct Counter {\n\
|----\n\
│    pub fn new() -> Self {\n\
│    pub fn new() -> Self {\n\
|----\n\
│    pub fn add(&mut self, step: Step) {\n\
│    pub fn add(&mut self, step: Step) {\n\
|----\n\
│fn main() {\n\
|----\n\
\n\
list.c\n\
|----\n\
│struct node {\n\
|----\n\
│union number zero;\n\
|----\n\
│typedef struct node node_t;\n\
|----\n\
│int length(const node_t *list);\n\
|----\n\
│int length(const node_t *list) {\n\
|----\n\
\n\
list.h\n\
|----\n\
│typedef int item_t;\n\
|----\n\
│void push(item_t item);\n\
│item_t pop(void);\n\
|----\n\
\n\
model.ts\n\
|----\n\
│  get(key: string): string | undefined;\n\
│  set(key: string, value: string): void;\n\
|----\n\
│export abstract class Base {\n\
│  abstract load(): Promise<void>;\n\
|----\n\
│declare function external(x: number): number;\n\
|----\n\
│module Legacy {\n\
|----\n\
│export class MemoryStore extends Base implements Store {\n\
|----\n\
│  constructor() {\n\
|----\n\
│  get(key: string) {\n\
|----\n\
│  set(key: string, value: string) {\n\
|----\n\
│  async load() {}\n\
|----\n\
│export function create(): Store {\n\
|----\n\
\n\
server.go\n\
|----\n\
│type Server struct {\n\
|----\n\
│type Handler func(http.ResponseWriter, *http.Request)\n\
|----\n\
│func New(addr string) *Server {\n\
|----\n\
│func (s *Server) Start() error {\n\
|----\n\
\n\
shapes.cpp\n\
|----\n\
│struct Point {\n\
|----\n\
│class Circle {\n\
|----\n\
│    explicit Circle(double r);\n\
│    double area() const;\n\
|----\n\
│double Circle::area() const {\n\
|----\n\
│double geo::distance(const geo::Point& a) {\n\
|----\n\
│typedef geo::Circle circle_t;\n\
|----\n\
│int main() {\n\
|----\n\
\n\
shapes.hpp\n\
|----\n\
│class Shape {\n\
|----\n\
│    virtual double area() const = 0;\n\
|----\n\
\n\
store.rb\n\
|----\n\
│module Storage\n\
|----\n\
│  class Memory\n\
│    def initialize\n\
|----\n\
│    def get(key)\n\
|----\n\
│    alias fetch get\n\
|----\n\
│    def self.create\n\
|----\n\
│    def default\n\
|----\n\
│class Storage::Disk < Storage::Memory\n\
|----\n\
\n\
tool.py\n\
|----\n\
│class Config:\n\
|----\n\
│    def __init__(self):\n\
|----\n\
│    def debug(self):\n\
|----\n\
│def main():\n\
|----\n\
│    def helper():\n\
|----\n\
│async def fetch(url):\n\
|----\n\
\n\
view.tsx\n\
|----\n\
│export function Header({ title }: Props) {\n\
|----\n\
│export class Page extends React.Component<Props> {\n\
│  render() {\n\
|----\n\
\n";

/// Two files of this repository, as they were when the test was written (copied, so edits to the live files
/// do not move the test).
const REPO: &str = "format.rs\n\
|----\n\
│pub(crate) struct Line {\n\
|----\n\
│    pub(crate) fn text(&self) -> String {\n\
│    pub(crate) fn text(&self) -> String {\n\
|----\n\
│pub(crate) fn sorted_lines(root: &Path, entries: &[Entry]) -> Vec<Line> {\n\
|----\n\
│fn display_order(a: &Line, b: &Line) -> Ordering {\n\
|----\n\
│fn split(line: &Line) -> Vec<&str> {\n\
|----\n\
│pub(crate) fn render(lines: &[Line], allowed: &[bool], hit_limit: bool) -> String {\n\
|----\n\
│    fn entries(root: &str, paths: &[&str]) -> Vec<Entry> {\n\
│    fn entries(root: &str, paths: &[&str]) -> Vec<Entry> {\n\
|----\n\
│    fn sorted_text(paths: &[&str]) -> String {\n\
│    fn sorted_text(paths: &[&str]) -> String {\n\
|----\n\
│    fn files_first_then_each_directory_with_its_subtree() {\n\
│    fn files_first_then_each_directory_with_its_subtree() {\n\
|----\n\
│    fn names_sort_case_insensitively_and_numerically() {\n\
│    fn names_sort_case_insensitively_and_numerically() {\n\
|----\n\
│    fn locked_entries_are_marked() {\n\
│    fn locked_entries_are_marked() {\n\
|----\n\
│    fn truncation_note_and_empty_result() {\n\
│    fn truncation_note_and_empty_result() {\n\
|----\n\
\n\
image.rs\n\
|----\n\
│pub fn media_type(extension: &str) -> Option<&'static str> {\n\
|----\n\
│pub fn read_image(path: &Path, media_type: &str) -> Result<Block, String> {\n\
|----\n\
│fn image_block(bytes: &[u8], media_type: &str) -> Result<Block, String> {\n\
|----\n\
│    pub(crate) fn png_header(width: u32, height: u32) -> Vec<u8> {\n\
│    pub(crate) fn png_header(width: u32, height: u32) -> Vec<u8> {\n\
|----\n\
│    fn media_types() {\n\
│    fn media_types() {\n\
|----\n\
│    fn a_small_png_becomes_an_image_block() {\n\
│    fn a_small_png_becomes_an_image_block() {\n\
|----\n\
│    fn oversized_images_are_refused() {\n\
│    fn oversized_images_are_refused() {\n\
|----\n\
│    fn unknown_data_has_no_dimensions() {\n\
│    fn unknown_data_has_no_dimensions() {\n\
|----\n\
│    fn unreadable_files_say_so() {\n\
│    fn unreadable_files_say_so() {\n\
|----\n\
\n";

#[test]
fn every_language_is_outlined() {
    let ws = workspace();
    let outline = outliner(ws.path());
    copy_dir(&data("langs"), &ws.path().join("src"));
    let result = outline("src");
    assert_eq!(result.description, "[list_code_definition_names for 'src']");
    assert_eq!(result.status, ResultStatus::Success);
    pretty_assertions::assert_eq!(text(&result), LANGS);
}

#[test]
fn files_of_this_repository() {
    let ws = workspace();
    let outline = outliner(ws.path());
    copy_dir(&data("repo"), &ws.path().join("rust"));
    pretty_assertions::assert_eq!(text(&outline("rust")), REPO);

    // The live source of a plugin: every block is a file name, then the outline between `|----` lines.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let live = text(&outliner(root)("plugins/list_code_definition_names/src"));
    assert!(live.starts_with("languages.rs\n|----\n"), "{live}");
    assert!(live.contains("\nlib.rs\n|----\n"), "{live}");
    assert!(live.contains("│pub struct ListCodeDefinitionNames {\n"), "{live}");
    assert!(live.contains("\noutline.rs\n|----\n│pub struct SourceFile {\n"), "{live}");
}

#[test]
fn limits_ignores_and_line_endings() {
    let ws = workspace();
    let outline = outliner(ws.path());
    let dir = ws.path().join("many");
    std::fs::create_dir(&dir).unwrap();
    // Sixty source files: only the first fifty are outlined.
    for i in 0..60 {
        std::fs::write(dir.join(format!("m{i:02}.py")), format!("def f{i}():\n    pass\n")).unwrap();
    }
    let text60 = text(&outline("many"));
    let expected: String = (0..50).map(|i| format!("m{i:02}.py\n|----\n│def f{i}():\n|----\n\n")).collect();
    assert_eq!(text60, expected);

    // The listing stops at 200 entries, directories included: 199 directories leave room for one file.
    let crowded = ws.path().join("crowded");
    for i in 0..199 {
        std::fs::create_dir_all(crowded.join(format!("d{i:03}"))).unwrap();
    }
    std::fs::write(crowded.join("x1.go"), "package x\n\nfunc A() {}\n").unwrap();
    std::fs::write(crowded.join("x2.go"), "package x\n\nfunc B() {}\n").unwrap();
    assert_eq!(text(&outline("crowded")), "x1.go\n|----\n│func A() {}\n|----\n\n");

    // `.clineignore`d files are left out; extensions are case-sensitive; CRLF lines keep their `\r`.
    let mixed = ws.path().join("mixed");
    std::fs::create_dir(&mixed).unwrap();
    std::fs::write(ws.path().join(".clineignore"), "mixed/secret.rs\n").unwrap();
    std::fs::write(mixed.join("secret.rs"), "fn hidden() {}\n").unwrap();
    std::fs::write(mixed.join("LOUD.RS"), "fn loud() {}\n").unwrap();
    std::fs::write(mixed.join("win.java"), "class Win {\r\n  void run() {}\r\n}\r\n").unwrap();
    assert_eq!(text(&outline("mixed")), "win.java\n|----\n│class Win {\r\n│  void run() {}\r\n|----\n\n");
}

#[test]
fn bad_paths_are_cline_errors() {
    let ws = workspace();
    let outline = outliner(ws.path());
    std::fs::write(ws.path().join("main.rs"), "fn main() {}\n").unwrap();
    std::fs::create_dir(ws.path().join("docs")).unwrap();
    std::fs::write(ws.path().join("docs/README.md"), "# Docs\n").unwrap();
    std::fs::write(ws.path().join("docs/data.py"), "x = 1\n").unwrap();

    let file = outline("main.rs");
    assert_eq!(file.status, ResultStatus::Error);
    assert_eq!(
        text(&file),
        tool_error("The provided path is a file, not a directory. To view this file use read_file instead, or pass the parent directory to list_code_definition_names.")
    );
    let missing = outline("nowhere");
    assert_eq!(missing.status, ResultStatus::Error);
    assert_eq!(text(&missing), tool_error("This directory does not exist or you do not have permission to access it."));
    // No source file with a definition: Cline's sentence, as a successful result.
    let empty = outline("docs");
    assert_eq!(empty.status, ResultStatus::Success);
    assert_eq!(text(&empty), "No source code definitions found.");
    let no_path = outline(" ");
    assert!(text(&no_path).contains("Missing value for required parameter 'path'"), "{}", text(&no_path));
}
