//! The languages `list_code_definition_names` outlines: which file extensions map to which tree-sitter grammar,
//! and the definition query run on each.
//!
//! The queries are ours, written for the grammar versions this crate pins, and capture what Cline's queries
//! capture (apps/vscode/src/services/tree-sitter/queries/*.ts): the same definition kinds, the same capture
//! layout (a `@definition.*` capture on the whole definition, a capture whose name contains `name` on the line
//! to print) and, for JavaScript, Go and Ruby, the leading `@doc` comments, because every capture moves the
//! `|----` separators. Where the current grammars renamed a node (Kotlin's `simple_identifier` is now
//! `identifier`, its interfaces and enums are `class_declaration`s, its type aliases are `type_alias`), the
//! query follows the grammar so the same definitions are found. Cline's Kotlin query ends in a stray `)` and
//! never compiles, so Cline outlines no Kotlin at all; ours works.

use std::sync::OnceLock;
use tree_sitter::{Language, Query};

/// One grammar with its query. TypeScript and TSX are two grammars sharing one query, as in Cline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Grammar {
    /// `js`, `jsx`.
    JavaScript,
    /// `ts`.
    TypeScript,
    /// `tsx`.
    Tsx,
    /// `py`.
    Python,
    /// `rs`.
    Rust,
    /// `go`.
    Go,
    /// `c`, `h`.
    C,
    /// `cpp`, `hpp`.
    Cpp,
    /// `cs`.
    CSharp,
    /// `rb`.
    Ruby,
    /// `java`.
    Java,
    /// `php`.
    Php,
    /// `swift`.
    Swift,
    /// `kt`.
    Kotlin,
}

/// Every grammar, in the order of [`Grammar`]'s variants.
pub(crate) const ALL: [Grammar; 14] = [
    Grammar::JavaScript,
    Grammar::TypeScript,
    Grammar::Tsx,
    Grammar::Python,
    Grammar::Rust,
    Grammar::Go,
    Grammar::C,
    Grammar::Cpp,
    Grammar::CSharp,
    Grammar::Ruby,
    Grammar::Java,
    Grammar::Php,
    Grammar::Swift,
    Grammar::Kotlin,
];

impl Grammar {
    /// The grammar for a file extension (without the dot). Case-sensitive, as Cline's filter is: `A.JS` is not
    /// outlined.
    pub fn for_extension(extension: &str) -> Option<Self> {
        Some(match extension {
            "js" | "jsx" => Self::JavaScript,
            "ts" => Self::TypeScript,
            "tsx" => Self::Tsx,
            "py" => Self::Python,
            "rs" => Self::Rust,
            "go" => Self::Go,
            "c" | "h" => Self::C,
            "cpp" | "hpp" => Self::Cpp,
            "cs" => Self::CSharp,
            "rb" => Self::Ruby,
            "java" => Self::Java,
            "php" => Self::Php,
            "swift" => Self::Swift,
            "kt" => Self::Kotlin,
            _ => return None,
        })
    }

    /// The tree-sitter language.
    pub fn language(self) -> Language {
        match self {
            Self::JavaScript => tree_sitter_javascript::LANGUAGE.into(),
            Self::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
            Self::Tsx => tree_sitter_typescript::LANGUAGE_TSX.into(),
            Self::Python => tree_sitter_python::LANGUAGE.into(),
            Self::Rust => tree_sitter_rust::LANGUAGE.into(),
            Self::Go => tree_sitter_go::LANGUAGE.into(),
            Self::C => tree_sitter_c::LANGUAGE.into(),
            Self::Cpp => tree_sitter_cpp::LANGUAGE.into(),
            Self::CSharp => tree_sitter_c_sharp::LANGUAGE.into(),
            Self::Ruby => tree_sitter_ruby::LANGUAGE.into(),
            Self::Java => tree_sitter_java::LANGUAGE.into(),
            Self::Php => tree_sitter_php::LANGUAGE_PHP.into(),
            Self::Swift => tree_sitter_swift::LANGUAGE.into(),
            Self::Kotlin => tree_sitter_kotlin_ng::LANGUAGE.into(),
        }
    }

    fn source(self) -> &'static str {
        match self {
            Self::JavaScript => JAVASCRIPT,
            Self::TypeScript | Self::Tsx => TYPESCRIPT,
            Self::Python => PYTHON,
            Self::Rust => RUST,
            Self::Go => GO,
            Self::C => C,
            Self::Cpp => CPP,
            Self::CSharp => CSHARP,
            Self::Ruby => RUBY,
            Self::Java => JAVA,
            Self::Php => PHP,
            Self::Swift => SWIFT,
            Self::Kotlin => KOTLIN,
        }
    }

    /// Compiles the query.
    fn compile(self) -> Result<Query, String> {
        Query::new(&self.language(), self.source()).map_err(|e| format!("{self:?} query: {e}"))
    }
}

/// Every grammar's compiled query, each built on first use and shared by every thread (a compiled query is
/// immutable). Owned by the handler rather than a static, so the memory goes with it when the host unloads a
/// replaced version of this plugin.
#[derive(Default)]
pub struct Queries([OnceLock<Result<Query, String>>; 14]);

impl Queries {
    /// The compiled query of `grammar`.
    pub fn get(&self, grammar: Grammar) -> Result<&Query, String> {
        let index = ALL.iter().position(|&g| g == grammar).unwrap_or(0);
        self.0[index].get_or_init(|| grammar.compile()).as_ref().map_err(Clone::clone)
    }
}

/// Classes (declarations and expressions), methods other than constructors, named functions and generators,
/// and arrow functions or function expressions assigned to a `const`/`let`/`var`, each with its leading comments.
const JAVASCRIPT: &str = r#"
((comment)* @doc
 .
 (method_definition name: (property_identifier) @name) @definition.method
 (#not-eq? @name "constructor"))

((comment)* @doc
 .
 [(class name: (_) @name) (class_declaration name: (_) @name)] @definition.class)

((comment)* @doc
 .
 [(function_declaration name: (identifier) @name)
  (generator_function_declaration name: (identifier) @name)] @definition.function)

((comment)* @doc
 .
 (lexical_declaration
   (variable_declarator
     name: (identifier) @name
     value: [(arrow_function) (function_expression)]) @definition.function))

((comment)* @doc
 .
 (variable_declaration
   (variable_declarator
     name: (identifier) @name
     value: [(arrow_function) (function_expression)]) @definition.function))
"#;

/// Function and method signatures, abstract methods, classes (abstract ones too), `module` blocks, functions and
/// methods (constructors included).
const TYPESCRIPT: &str = r#"
(function_signature name: (identifier) @name.definition.function) @definition.function
(method_signature name: (property_identifier) @name.definition.method) @definition.method
(abstract_method_signature name: (property_identifier) @name.definition.method) @definition.method
(abstract_class_declaration name: (type_identifier) @name.definition.class) @definition.class
(module name: (identifier) @name.definition.module) @definition.module
(function_declaration name: (identifier) @name.definition.function) @definition.function
(method_definition name: (property_identifier) @name.definition.method) @definition.method
(class_declaration name: (type_identifier) @name.definition.class) @definition.class
"#;

/// Classes and functions (methods are functions inside a class).
const PYTHON: &str = r#"
(class_definition name: (identifier) @name.definition.class) @definition.class
(function_definition name: (identifier) @name.definition.function) @definition.function
"#;

/// Structs, functions, and functions inside an `impl` or `trait` body, which Cline captures twice: once as a
/// method (the capture spans the whole body) and once as a function.
const RUST: &str = r#"
(struct_item name: (type_identifier) @name.definition.class) @definition.class
(declaration_list (function_item name: (identifier) @name.definition.method)) @definition.method
(function_item name: (identifier) @name.definition.function) @definition.function
"#;

/// Functions and methods with their leading comments, and type specifications.
const GO: &str = r#"
((comment)* @doc
 .
 (function_declaration name: (identifier) @name.definition.function) @definition.function)

((comment)* @doc
 .
 (method_declaration name: (field_identifier) @name.definition.method) @definition.method)

(type_spec name: (type_identifier) @name.definition.type) @definition.type
"#;

/// Structs with a body, declared unions, function declarators (prototypes too) and typedefs.
const C: &str = r#"
(struct_specifier name: (type_identifier) @name.definition.class body: (_)) @definition.class
(declaration type: (union_specifier name: (type_identifier) @name.definition.class)) @definition.class
(function_declarator declarator: (identifier) @name.definition.function) @definition.function
(type_definition declarator: (type_identifier) @name.definition.type) @definition.type
"#;

/// C's definitions, plus member function declarators, `Namespace::name` definitions and classes.
const CPP: &str = r#"
(struct_specifier name: (type_identifier) @name.definition.class body: (_)) @definition.class
(declaration type: (union_specifier name: (type_identifier) @name.definition.class)) @definition.class
(function_declarator declarator: (identifier) @name.definition.function) @definition.function
(function_declarator declarator: (field_identifier) @name.definition.function) @definition.function
(function_declarator
  declarator: (qualified_identifier scope: (namespace_identifier) @scope name: (identifier) @name.definition.method))
  @definition.method
(type_definition declarator: (type_identifier) @name.definition.type) @definition.type
(class_specifier name: (type_identifier) @name.definition.class) @definition.class
"#;

/// Classes, interfaces, methods and (block) namespaces.
const CSHARP: &str = r#"
(class_declaration name: (identifier) @name.definition.class) @definition.class
(interface_declaration name: (identifier) @name.definition.interface) @definition.interface
(method_declaration name: (identifier) @name.definition.method) @definition.method
(namespace_declaration name: (identifier) @name.definition.module) @definition.module
"#;

/// Methods, singleton methods and aliases; classes and singleton classes, with their leading comments; modules.
const RUBY: &str = r#"
((comment)* @doc
 .
 [(method name: (_) @name.definition.method) @definition.method
  (singleton_method name: (_) @name.definition.method) @definition.method])

(alias name: (_) @name.definition.method) @definition.method

((comment)* @doc
 .
 [(class
    name: [(constant) @name.definition.class
           (scope_resolution name: (_) @name.definition.class)]) @definition.class
  (singleton_class
    value: [(constant) @name.definition.class
            (scope_resolution name: (_) @name.definition.class)]) @definition.class])

(module
  name: [(constant) @name.definition.module
         (scope_resolution name: (_) @name.definition.module)]) @definition.module
"#;

/// Classes, methods and interfaces.
const JAVA: &str = r#"
(class_declaration name: (identifier) @name.definition.class) @definition.class
(method_declaration name: (identifier) @name.definition.method) @definition.method
(interface_declaration name: (identifier) @name.definition.interface) @definition.interface
"#;

/// Classes, functions and methods.
const PHP: &str = r#"
(class_declaration name: (name) @name.definition.class) @definition.class
(function_definition name: (name) @name.definition.function) @definition.function
(method_declaration name: (name) @name.definition.function) @definition.function
"#;

/// Classes (and structs, enums, actors), protocols, the members of a class body (functions, subscripts,
/// initialisers, deinitialisers, properties), properties anywhere, and functions.
const SWIFT: &str = r#"
(class_declaration name: (type_identifier) @name) @definition.class
(protocol_declaration name: (type_identifier) @name) @definition.interface
(class_declaration
  (class_body
    [(function_declaration name: (simple_identifier) @name)
     (subscript_declaration (parameter (simple_identifier) @name))
     (init_declaration "init" @name)
     (deinit_declaration "deinit" @name)])) @definition.method
(class_declaration
  (class_body [(property_declaration (pattern (simple_identifier) @name))])) @definition.property
(property_declaration (pattern (simple_identifier) @name)) @definition.property
(function_declaration name: (simple_identifier) @name) @definition.function
"#;

/// Classes (interfaces and enums are class declarations in this grammar), functions, objects, properties and
/// type aliases.
const KOTLIN: &str = r#"
(class_declaration name: (identifier) @name.definition.class) @definition.class
(function_declaration name: (identifier) @name.definition.function) @definition.function
(object_declaration name: (identifier) @name.definition.object) @definition.object
(property_declaration (variable_declaration (identifier) @name.definition.property)) @definition.property
(type_alias type: (identifier) @name.definition.typealias) @definition.typealias
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_query_compiles() {
        let queries = Queries::default();
        for grammar in ALL {
            if let Err(e) = queries.get(grammar) {
                panic!("{e}");
            }
        }
    }
}
