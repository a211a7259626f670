//! A crate's module tree as rustc builds it from `mod` declarations: which file (and which inline `mod`
//! block) each module is, following `foo.rs` + `foo/`, `mod.rs` and `#[path]` the way the compiler does, and
//! which modules are compiled only for tests.

use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use syn::{Attribute, Item, Meta};

/// A parsed source file.
pub struct SourceFile {
    pub path: PathBuf,
    pub syntax: syn::File,
    /// The module the file is (crate-relative segments; empty for the crate root).
    pub module: Vec<String>,
    /// Compiled only for tests: declared by a `#[cfg(test)]` module or inside one.
    pub test_only: bool,
}

/// One module of the crate.
pub struct Module {
    /// The file that declares it, and the line of the declaration (the root: its own file, line 1).
    pub declared_in: PathBuf,
    pub line: usize,
    pub test_only: bool,
}

/// Every module and file reachable from a crate root.
pub struct Tree {
    pub files: Vec<SourceFile>,
    /// Keyed by the module's path joined with `::` (the root is "").
    pub modules: BTreeMap<String, Module>,
}

impl Tree {
    /// Walks the `mod` declarations from `root` (a `lib.rs` or `main.rs`).
    pub fn load(root: &Path) -> Result<Tree> {
        let mut tree = Tree { files: Vec::new(), modules: BTreeMap::new() };
        tree.modules.insert(String::new(), Module { declared_in: root.to_owned(), line: 1, test_only: false });
        // (file, its module, test-only, whether its children live beside it as a `mod.rs`'s do)
        let mut queue = vec![(root.to_owned(), Vec::new(), false, true)];
        while let Some((path, module, test_only, mod_rs)) = queue.pop() {
            let syntax = parse(&path)?;
            let test_only = test_only || syntax.attrs.iter().any(is_test_only);
            let children_dir = children_dir(&path, mod_rs);
            let file_dir = path.parent().unwrap_or(Path::new("")).to_owned();
            let mut found = Vec::new();
            declarations(&syntax.items, &Place { file_dir: &file_dir, dir: &children_dir, top: true }, &mut found);
            for declaration in found {
                let mut child = module.clone();
                child.extend(declaration.module.iter().cloned());
                let child_test_only = test_only || declaration.test_only;
                tree.modules.insert(
                    child.join("::"),
                    Module { declared_in: path.clone(), line: declaration.line, test_only: child_test_only },
                );
                if let Some(candidates) = declaration.file {
                    let Some(file) = candidates.iter().find(|c| c.is_file()) else {
                        bail!(
                            "{}:{}: module `{}` has no file (looked for {})",
                            path.display(),
                            declaration.line,
                            child.join("::"),
                            candidates.iter().map(|c| c.display().to_string()).collect::<Vec<_>>().join(", ")
                        );
                    };
                    queue.push((file.clone(), child, child_test_only, declaration.path_attribute));
                }
            }
            tree.files.push(SourceFile { path, syntax, module, test_only });
        }
        tree.files.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(tree)
    }

    /// Whether `path` (crate-relative) names a module of the crate.
    pub fn is_module(&self, path: &[String]) -> bool {
        self.modules.contains_key(&path.join("::"))
    }
}

/// Reads and parses one file.
pub fn parse(path: &Path) -> Result<syn::File> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    syn::parse_file(&text).map_err(|error| {
        let at = error.span().start();
        anyhow::anyhow!("{}:{}:{}: cannot parse: {error}", path.display(), at.line, at.column + 1)
    })
}

/// Where the files of the modules a file declares live: a crate root, a `mod.rs` or a file loaded through
/// `#[path]` keeps them beside itself; `foo.rs` keeps them in `foo/`.
pub fn children_dir(file: &Path, mod_rs: bool) -> PathBuf {
    let dir = file.parent().unwrap_or(Path::new("")).to_owned();
    let stem = file.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    if mod_rs || stem == "mod" {
        dir
    } else {
        dir.join(stem)
    }
}

/// A `mod` declaration found in a file, inline blocks flattened into their paths.
pub struct Declaration {
    /// The module's path relative to the declaring file's module.
    pub module: Vec<String>,
    pub line: usize,
    pub test_only: bool,
    /// For `mod x;`: the files it may be, in the compiler's order; `None` for an inline block.
    pub file: Option<Vec<PathBuf>>,
    /// Loaded through `#[path]`: the compiler then reads the file's own child modules beside it.
    pub path_attribute: bool,
}

/// Where declarations are being read: the file's own directory (what a top-level `#[path]` is relative
/// to) and the directory its child modules' files live in.
pub struct Place<'a> {
    pub file_dir: &'a Path,
    pub dir: &'a Path,
    pub top: bool,
}

/// Collects the `mod` declarations of `items`, descending into inline blocks.
pub fn declarations(items: &[Item], place: &Place<'_>, out: &mut Vec<Declaration>) {
    for item in items {
        let Item::Mod(module) = item else { continue };
        let name = module.ident.to_string().trim_start_matches("r#").to_owned();
        let line = module.ident.span().start().line;
        let test_only = module.attrs.iter().any(is_test_only);
        let path_attr = path_attribute(&module.attrs);
        match &module.content {
            None => {
                let file = match &path_attr {
                    // Outside inline blocks a `#[path]` is relative to the declaring file's directory,
                    // inside them to the block's directory.
                    Some(path) if place.top => vec![place.file_dir.join(path)],
                    Some(path) => vec![place.dir.join(path)],
                    None => vec![place.dir.join(format!("{name}.rs")), place.dir.join(&name).join("mod.rs")],
                };
                let path_attribute = path_attr.is_some();
                out.push(Declaration { module: vec![name], line, test_only, file: Some(file), path_attribute });
            }
            Some((_, items)) => {
                out.push(Declaration {
                    module: vec![name.clone()],
                    line,
                    test_only,
                    file: None,
                    path_attribute: false,
                });
                let dir = place.dir.join(path_attr.unwrap_or_else(|| name.clone()));
                let mut inner = Vec::new();
                declarations(items, &Place { file_dir: place.file_dir, dir: &dir, top: false }, &mut inner);
                for mut declaration in inner {
                    declaration.module.insert(0, name.clone());
                    declaration.test_only |= test_only;
                    out.push(declaration);
                }
            }
        }
    }
}

/// The value of a `#[path = "..."]` attribute.
fn path_attribute(attrs: &[Attribute]) -> Option<String> {
    attrs.iter().find_map(|attr| match &attr.meta {
        Meta::NameValue(nv) if nv.path.is_ident("path") => match &nv.value {
            syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) => Some(s.value()),
            _ => None,
        },
        _ => None,
    })
}

/// Whether an attribute is a `cfg` that is false when `test` is off (`cfg(test)`, `cfg(all(test, unix))`,
/// `cfg(not(not(test)))`): such an item exists only in test builds. Other conditions count as possibly on.
pub fn is_test_only(attr: &Attribute) -> bool {
    if !attr.path().is_ident("cfg") {
        return false;
    }
    match attr.parse_args::<Meta>() {
        Ok(meta) => cfg_without_test(&meta) == Some(false),
        Err(_) => false,
    }
}

/// Evaluates a cfg predicate with `test` off: `Some(false)` when it is surely off, `None` when it depends on
/// something else.
fn cfg_without_test(meta: &Meta) -> Option<bool> {
    match meta {
        Meta::Path(path) if path.is_ident("test") => Some(false),
        Meta::List(list) => {
            let args =
                list.parse_args_with(syn::punctuated::Punctuated::<Meta, syn::Token![,]>::parse_terminated).ok()?;
            let values: Vec<Option<bool>> = args.iter().map(cfg_without_test).collect();
            if list.path.is_ident("not") {
                values.first().copied().flatten().map(|v| !v)
            } else if list.path.is_ident("all") {
                if values.contains(&Some(false)) {
                    Some(false)
                } else if values.iter().all(|v| *v == Some(true)) {
                    Some(true)
                } else {
                    None
                }
            } else if list.path.is_ident("any") {
                if values.contains(&Some(true)) {
                    Some(true)
                } else if values.iter().all(|v| *v == Some(false)) {
                    Some(false)
                } else {
                    None
                }
            } else {
                None
            }
        }
        _ => None,
    }
}

/// An item's outer attributes.
pub fn item_attrs(item: &Item) -> &[Attribute] {
    match item {
        Item::Const(i) => &i.attrs,
        Item::Enum(i) => &i.attrs,
        Item::ExternCrate(i) => &i.attrs,
        Item::Fn(i) => &i.attrs,
        Item::ForeignMod(i) => &i.attrs,
        Item::Impl(i) => &i.attrs,
        Item::Macro(i) => &i.attrs,
        Item::Mod(i) => &i.attrs,
        Item::Static(i) => &i.attrs,
        Item::Struct(i) => &i.attrs,
        Item::Trait(i) => &i.attrs,
        Item::TraitAlias(i) => &i.attrs,
        Item::Type(i) => &i.attrs,
        Item::Union(i) => &i.attrs,
        Item::Use(i) => &i.attrs,
        _ => &[],
    }
}

/// An impl item's outer attributes.
pub fn impl_item_attrs(item: &syn::ImplItem) -> &[Attribute] {
    match item {
        syn::ImplItem::Const(i) => &i.attrs,
        syn::ImplItem::Fn(i) => &i.attrs,
        syn::ImplItem::Type(i) => &i.attrs,
        syn::ImplItem::Macro(i) => &i.attrs,
        _ => &[],
    }
}

/// A trait item's outer attributes.
pub fn trait_item_attrs(item: &syn::TraitItem) -> &[Attribute] {
    match item {
        syn::TraitItem::Const(i) => &i.attrs,
        syn::TraitItem::Fn(i) => &i.attrs,
        syn::TraitItem::Type(i) => &i.attrs,
        syn::TraitItem::Macro(i) => &i.attrs,
        _ => &[],
    }
}
