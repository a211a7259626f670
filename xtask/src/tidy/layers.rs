//! The layering check: every reference from one module of a crate to another (a `use`, or a path in an
//! expression, a type, a pattern or a macro's tokens) must point to the module's own layer or one below it,
//! as the crate's layer file (`runtime/layers.toml`) declares them, bottom first.
//!
//! References are read from the syntax tree (`syn`), so comments and string literals never count, and
//! items compiled only for tests (`#[cfg(test)]`) are skipped. The crate root (`lib.rs`: module
//! declarations and the public re-exports) belongs to no layer; a path through one of its re-exports
//! (`crate::Config`) counts as a reference to the module the re-export names.

use super::modules::{impl_item_attrs, is_test_only, item_attrs, trait_item_attrs, Tree};
use super::Problem;
use anyhow::{bail, Context, Result};
use proc_macro2::{TokenStream, TokenTree};
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use syn::visit::{self, Visit};
use syn::{Attribute, Item, UseTree};

/// The layer file as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LayerFile {
    layer: Vec<LayerSpec>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LayerSpec {
    name: String,
    modules: Vec<String>,
}

/// One module path of the layer file: `a::b` names `a::b` and everything below it, `a::*` everything
/// below `a` but not `a` itself.
struct Entry {
    text: String,
    segments: Vec<String>,
    wildcard: bool,
    layer: usize,
}

impl Entry {
    fn covers(&self, module: &[String]) -> bool {
        module.starts_with(&self.segments) && (!self.wildcard || module.len() > self.segments.len())
    }

    /// Longer entries are more specific; `a::*` is more specific than `a`.
    fn specificity(&self) -> usize {
        self.segments.len() * 2 + usize::from(self.wildcard)
    }
}

/// The declared layers.
pub struct Layers {
    names: Vec<String>,
    entries: Vec<Entry>,
}

impl Layers {
    /// Reads a layer file.
    pub fn parse(text: &str) -> Result<Layers> {
        let file: LayerFile = toml::from_str(text)?;
        let mut entries = Vec::new();
        let mut seen = BTreeSet::new();
        for (layer, spec) in file.layer.iter().enumerate() {
            for module in &spec.modules {
                let mut segments: Vec<String> = module.split("::").map(str::to_owned).collect();
                let wildcard = segments.last().is_some_and(|last| last == "*");
                if wildcard {
                    segments.pop();
                }
                let valid = |s: &String| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
                if segments.is_empty() || !segments.iter().all(valid) {
                    bail!(
                        "layer {:?}: {module:?} is not a module path (`a::b`, or `a::*` for what is below a)",
                        spec.name
                    );
                }
                if !seen.insert(module.clone()) {
                    bail!("{module:?} is listed twice");
                }
                entries.push(Entry { text: module.clone(), segments, wildcard, layer });
            }
        }
        Ok(Layers { names: file.layer.into_iter().map(|spec| spec.name).collect(), entries })
    }

    /// The most specific entry covering `module`.
    fn entry(&self, module: &[String]) -> Option<&Entry> {
        self.entries.iter().filter(|entry| entry.covers(module)).max_by_key(|entry| entry.specificity())
    }

    /// The layer of `module`, 0 the bottom.
    pub fn layer_of(&self, module: &[String]) -> Option<usize> {
        self.entry(module).map(|entry| entry.layer)
    }

    /// "1 text, 2 types, …": the numbers the messages use.
    pub fn legend(&self) -> String {
        self.names.iter().enumerate().map(|(i, name)| format!("{} {name}", i + 1)).collect::<Vec<_>>().join(", ")
    }
}

/// Checks the crate rooted at `root` (its `lib.rs`) against the layer file `layers_path`.
pub fn check(root: &Path, layers_path: &Path) -> Result<Vec<Problem>> {
    let text = std::fs::read_to_string(layers_path).with_context(|| format!("reading {}", layers_path.display()))?;
    let layers = Layers::parse(&text).with_context(|| format!("in {}", layers_path.display()))?;
    let tree = Tree::load(root)?;
    let mut problems = Vec::new();

    let modules: Vec<(Vec<String>, &super::modules::Module)> = tree
        .modules
        .iter()
        .filter(|(name, module)| !name.is_empty() && !module.test_only)
        .map(|(name, module)| (name.split("::").map(str::to_owned).collect(), module))
        .collect();
    for (path, module) in &modules {
        if layers.layer_of(path).is_none() {
            problems.push(Problem {
                file: module.declared_in.clone(),
                line: module.line,
                message: format!(
                    "module {} is in no layer of {}; add it to the layer it belongs to",
                    path.join("::"),
                    layers_path.display()
                ),
            });
        }
    }
    for entry in &layers.entries {
        if !modules.iter().any(|(path, _)| entry.covers(path)) {
            let line = text.lines().position(|l| l.contains(&format!("\"{}\"", entry.text))).map_or(1, |i| i + 1);
            problems.push(Problem {
                file: layers_path.to_owned(),
                line,
                message: format!("{:?} names no module of the crate; remove it or fix its path", entry.text),
            });
        }
    }

    let reexports = root_reexports(&tree);
    let mut seen = BTreeSet::new();
    for file in tree.files.iter().filter(|file| !file.test_only && !file.module.is_empty()) {
        let mut refs = References { tree: &tree, module: file.module.clone(), found: Vec::new() };
        refs.visit_file(&file.syntax);
        for (line, from, path) in refs.found {
            let Some(target) = target_module(&tree, &reexports, &path) else { continue };
            let (Some(from_layer), Some(to_layer)) = (layers.layer_of(&from), layers.layer_of(&target)) else {
                continue;
            };
            if to_layer > from_layer && seen.insert((file.path.clone(), line, target.clone())) {
                problems.push(Problem {
                    file: file.path.clone(),
                    line,
                    message: format!(
                        "module {} (layer {}) imports crate::{} (layer {}, above it)",
                        from.join("::"),
                        from_layer + 1,
                        target.join("::"),
                        to_layer + 1
                    ),
                });
            }
        }
    }
    Ok(problems)
}

/// The module a crate path lands in: its longest prefix that is a module, or, for a name the root
/// re-exports, the module the re-export points into. `None` for the root's own items.
fn target_module(tree: &Tree, reexports: &BTreeMap<String, Vec<String>>, path: &[String]) -> Option<Vec<String>> {
    let longest = (1..=path.len()).rev().map(|n| &path[..n]).find(|prefix| tree.is_module(prefix));
    match longest {
        Some(prefix) => Some(prefix.to_vec()),
        None => {
            let target = reexports.get(path.first()?)?;
            (1..=target.len()).rev().map(|n| &target[..n]).find(|prefix| tree.is_module(prefix)).map(<[_]>::to_vec)
        }
    }
}

/// The names the crate root's `use` items bring in, each with the crate path it stands for.
fn root_reexports(tree: &Tree) -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    let Some(root) = tree.files.iter().find(|file| file.module.is_empty()) else { return out };
    for item in &root.syntax.items {
        let Item::Use(item) = item else { continue };
        let mut leaves = Vec::new();
        use_leaves(&item.tree, &mut Vec::new(), &mut leaves);
        for (path, name, _) in leaves {
            if let (Some(name), Some(path)) = (name, resolve(tree, &[], &path)) {
                out.insert(name, path);
            }
        }
    }
    out
}

/// Flattens a use tree into (full path, name it binds, line). `self` in a group is the group's own path;
/// a glob binds no single name.
fn use_leaves(tree: &UseTree, prefix: &mut Vec<String>, out: &mut Vec<(Vec<String>, Option<String>, usize)>) {
    match tree {
        UseTree::Path(path) => {
            prefix.push(path.ident.to_string());
            use_leaves(&path.tree, prefix, out);
            prefix.pop();
        }
        UseTree::Name(name) => {
            let line = name.ident.span().start().line;
            if name.ident == "self" {
                out.push((prefix.clone(), prefix.last().cloned(), line));
            } else {
                let mut path = prefix.clone();
                path.push(name.ident.to_string());
                out.push((path, Some(name.ident.to_string()), line));
            }
        }
        UseTree::Rename(rename) => {
            let mut path = prefix.clone();
            if rename.ident != "self" {
                path.push(rename.ident.to_string());
            }
            out.push((path, Some(rename.rename.to_string()), rename.ident.span().start().line));
        }
        UseTree::Glob(glob) => out.push((prefix.clone(), None, glob.star_token.spans[0].start().line)),
        UseTree::Group(group) => group.items.iter().for_each(|tree| use_leaves(tree, prefix, out)),
    }
}

/// The crate path (without `crate`) that `segments`, written in module `current`, stands for, when it is a
/// path into this crate: `crate::…`, `self::…`, `super::…`, or a child module's name.
fn resolve(tree: &Tree, current: &[String], segments: &[String]) -> Option<Vec<String>> {
    let first = segments.first()?;
    match first.as_str() {
        "crate" => Some(segments[1..].to_vec()),
        "self" => Some(current.iter().chain(&segments[1..]).cloned().collect()),
        "super" => {
            let supers = segments.iter().take_while(|s| *s == "super").count();
            let base = current.get(..current.len().checked_sub(supers)?)?;
            Some(base.iter().chain(&segments[supers..]).cloned().collect())
        }
        _ if segments.len() >= 2 => {
            let mut child = current.to_vec();
            child.push(first.clone());
            tree.is_module(&child).then(|| child.into_iter().chain(segments[1..].iter().cloned()).collect())
        }
        _ => None,
    }
}

/// Collects a file's references to crate paths: (line, the module they are written in, the crate path).
struct References<'a> {
    tree: &'a Tree,
    module: Vec<String>,
    found: Vec<(usize, Vec<String>, Vec<String>)>,
}

impl References<'_> {
    fn record(&mut self, segments: &[String], line: usize) {
        if let Some(path) = resolve(self.tree, &self.module, segments) {
            self.found.push((line, self.module.clone(), path));
        }
    }

    /// Paths in a macro's tokens (`format!("{}", crate::a::b())`): every run of `ident :: ident …`.
    fn scan(&mut self, tokens: TokenStream) {
        let tokens: Vec<TokenTree> = tokens.into_iter().collect();
        let mut i = 0;
        while i < tokens.len() {
            match &tokens[i] {
                TokenTree::Group(group) => {
                    self.scan(group.stream());
                    i += 1;
                }
                TokenTree::Ident(first) => {
                    let line = first.span().start().line;
                    let mut segments = vec![first.to_string()];
                    let mut j = i + 1;
                    while let (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b)), Some(TokenTree::Ident(next))) =
                        (tokens.get(j), tokens.get(j + 1), tokens.get(j + 2))
                    {
                        if a.as_char() != ':' || b.as_char() != ':' {
                            break;
                        }
                        segments.push(next.to_string());
                        j += 3;
                    }
                    self.record(&segments, line);
                    i = j;
                }
                TokenTree::Punct(_) | TokenTree::Literal(_) => i += 1,
            }
        }
    }
}

fn skipped(attrs: &[Attribute]) -> bool {
    attrs.iter().any(is_test_only)
}

impl<'ast> Visit<'ast> for References<'_> {
    fn visit_item(&mut self, item: &'ast Item) {
        if skipped(item_attrs(item)) {
            return;
        }
        match item {
            // A module's own file is read on its own; an inline block is read here, as that module.
            Item::Mod(module) => {
                if let Some((_, items)) = &module.content {
                    self.module.push(module.ident.to_string());
                    items.iter().for_each(|item| self.visit_item(item));
                    self.module.pop();
                }
            }
            Item::Use(item) => {
                let mut leaves = Vec::new();
                use_leaves(&item.tree, &mut Vec::new(), &mut leaves);
                for (path, _, line) in leaves {
                    self.record(&path, line);
                }
            }
            _ => visit::visit_item(self, item),
        }
    }

    fn visit_impl_item(&mut self, item: &'ast syn::ImplItem) {
        if !skipped(impl_item_attrs(item)) {
            visit::visit_impl_item(self, item);
        }
    }

    fn visit_trait_item(&mut self, item: &'ast syn::TraitItem) {
        if !skipped(trait_item_attrs(item)) {
            visit::visit_trait_item(self, item);
        }
    }

    fn visit_field(&mut self, field: &'ast syn::Field) {
        if !skipped(&field.attrs) {
            visit::visit_field(self, field);
        }
    }

    fn visit_variant(&mut self, variant: &'ast syn::Variant) {
        if !skipped(&variant.attrs) {
            visit::visit_variant(self, variant);
        }
    }

    fn visit_arm(&mut self, arm: &'ast syn::Arm) {
        if !skipped(&arm.attrs) {
            visit::visit_arm(self, arm);
        }
    }

    fn visit_local(&mut self, local: &'ast syn::Local) {
        if !skipped(&local.attrs) {
            visit::visit_local(self, local);
        }
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        // `::name` is always an external crate.
        if let (Some(first), None) = (path.segments.first(), &path.leading_colon) {
            self.record(&segments, first.ident.span().start().line);
        }
        visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        visit::visit_macro(self, mac);
        self.scan(mac.tokens.clone());
    }
}
