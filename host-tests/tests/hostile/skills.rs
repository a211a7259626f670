//! Class 8: skill files that are not files. A `SKILL.md` linked to `/dev/zero` ate 2.1 GB and a FIFO hung
//! use_skill forever. Every skill file is read as a small regular file inside its skill's folder: each bad
//! one below is skipped from the listing with a warning naming it, use_skill on it answers why, and the good
//! skills beside them still load. Each call runs under one generous bound, so a hang fails instead of
//! blocking the suite.

use crate::util::{plugins, shipped, toolshed_bin, workspace};
use serde_json::json;
use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;
use toolshed::{Config, Runtime, TaskContext, ToolUse};

const BOUND: Duration = Duration::from_secs(60);

const MIB: u64 = 1024 * 1024;

fn skill_text(name: &str, body: &str) -> String {
    format!("---\nname: {name}\ndescription: The {name} skill\n---\n\n{body}\n")
}

/// Lays out good and bad skills in `dir`, with `outside` for what links lead to; returns the bad ones'
/// names and the words their refusal must hold.
fn lay_out(dir: &Path, outside: &Path) -> Vec<(&'static str, &'static str)> {
    let folder = |name: &str| {
        std::fs::create_dir_all(dir.join(name)).unwrap();
        dir.join(name)
    };
    std::fs::write(folder("good").join("SKILL.md"), skill_text("good", "Do good things.")).unwrap();
    // A link to a file inside its own folder is fine.
    std::fs::write(folder("linked").join("real.md"), skill_text("linked", "Linked inside.")).unwrap();
    std::os::unix::fs::symlink("real.md", dir.join("linked/SKILL.md")).unwrap();

    std::fs::write(outside.join("secret.md"), skill_text("outside", "SECRET")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", folder("zero").join("SKILL.md")).unwrap();
    std::os::unix::fs::symlink("/dev/stdin", folder("stdin").join("SKILL.md")).unwrap();
    nix::unistd::mkfifo(&folder("fifo").join("SKILL.md"), nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    // A FIFO inside the folder, reached through a link that stays inside: refused as not a regular file.
    nix::unistd::mkfifo(&folder("fifo-link").join("pipe"), nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    std::os::unix::fs::symlink("pipe", dir.join("fifo-link/SKILL.md")).unwrap();
    std::os::unix::fs::symlink(outside.join("secret.md"), folder("outside").join("SKILL.md")).unwrap();
    // Relative, to a sibling skill's file: out of its own folder all the same.
    std::os::unix::fs::symlink("../good/SKILL.md", folder("relative").join("SKILL.md")).unwrap();
    std::os::unix::fs::symlink("missing.md", folder("dangling").join("SKILL.md")).unwrap();
    std::fs::hard_link(outside.join("secret.md"), folder("hardlink").join("SKILL.md")).unwrap();
    // Sparse: a gigabyte on disk costs nothing, and reading it would cost a gigabyte.
    let huge = std::fs::File::create(folder("huge").join("SKILL.md")).unwrap();
    huge.set_len(1024 * MIB).unwrap();
    // Just over the cap, with a valid header: refused for its size alone.
    let mut over = skill_text("over", "");
    over.push_str(&"x".repeat(MIB as usize));
    std::fs::write(folder("over").join("SKILL.md"), over).unwrap();
    std::fs::create_dir_all(folder("directory").join("SKILL.md")).unwrap();
    vec![
        ("zero", "leads out of"),
        ("stdin", "leads out of"),
        ("fifo", "not a regular file"),
        ("fifo-link", "not a regular file"),
        ("outside", "leads out of"),
        ("relative", "leads out of"),
        ("dangling", "No such file"),
        ("hardlink", "hard links"),
        ("huge", "larger than 1024 KiB"),
        ("over", "larger than 1024 KiB"),
        ("directory", "not a regular file"),
    ]
}

/// Runs one use_skill call on its own thread, failing the test at [`BOUND`].
fn use_skill(runtime: &std::sync::Arc<Runtime>, ws: &Path, name: &str) -> String {
    let (done, wait) = mpsc::channel();
    let (runtime, ws, name) = (std::sync::Arc::clone(runtime), ws.to_owned(), name.to_owned());
    std::thread::spawn(move || {
        let task = runtime.task(TaskContext::new(&ws));
        let result =
            crate::util::block_on(task.execute(ToolUse::new("t1", "use_skill", json!({ "skill_name": name }))));
        let _ = done.send(crate::util::text(&result));
    });
    wait.recv_timeout(BOUND).unwrap_or_else(|_| panic!("use_skill did not answer within {BOUND:?}"))
}

/// use_skill on a refused skill says why, and never shows what a link led to.
fn check_refused(text: &str, name: &str, why: &str) {
    assert!(text.starts_with(&format!("Error loading skill \"{name}\": ")), "{name}: {text}");
    assert!(text.contains(why), "{name}: expected {why:?} in {text}");
    assert!(!text.contains("SECRET"), "{name}: {text}");
}

fn runtime(toml: &str) -> std::sync::Arc<Runtime> {
    std::sync::Arc::new(shipped().config(Config::from_toml_str(toml).unwrap()).build().unwrap())
}

#[test]
fn bad_user_skills_are_refused_and_the_good_ones_load() {
    let ws = workspace();
    let root = tempfile::tempdir().unwrap();
    let (skills, outside) = (root.path().join("skills"), root.path().join("outside"));
    std::fs::create_dir_all(&outside).unwrap();
    let bad = lay_out(&skills, &outside);
    let runtime = runtime(&format!("[skills]\ndirs = [{skills:?}]\n"));
    for (name, why) in &bad {
        check_refused(&use_skill(&runtime, ws.path(), name), name, why);
        // The next call works, and the listing holds only the good skills.
        let good = use_skill(&runtime, ws.path(), "good");
        assert!(good.starts_with("# Skill \"good\" is now active\n\nDo good things.\n"), "after {name}: {good}");
    }
    let linked = use_skill(&runtime, ws.path(), "linked");
    assert!(linked.starts_with("# Skill \"linked\" is now active\n\nLinked inside.\n"), "{linked}");
    let unknown = use_skill(&runtime, ws.path(), "nope");
    assert_eq!(unknown, "Error: Skill \"nope\" not found. Available skills: good, linked");
}

/// In a trusted workspace, a skill folder that is a link out of the workspace is refused too (a cloned
/// repository must not pick which of the user's files reach the model), and so is each bad file.
#[test]
fn bad_workspace_skills_are_refused_in_a_trusted_workspace() {
    let ws = workspace();
    let outside = tempfile::tempdir().unwrap();
    let skills = ws.path().join(".cline/skills");
    let bad = lay_out(&skills, outside.path());
    let elsewhere = outside.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::write(elsewhere.join("SKILL.md"), skill_text("elsewhere", "SECRET")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, skills.join("elsewhere")).unwrap();
    let empty = tempfile::tempdir().unwrap();
    let runtime =
        runtime(&format!("[skills]\ndirs = [{:?}]\n[plugins]\ntrusted_workspaces = [{:?}]\n", empty.path(), ws.path()));
    for (name, why) in bad.iter().chain([&("elsewhere", "leads out of the workspace")]) {
        check_refused(&use_skill(&runtime, ws.path(), name), name, why);
    }
    let good = use_skill(&runtime, ws.path(), "good");
    assert!(good.starts_with("# Skill \"good\" is now active\n\nDo good things.\n"), "{good}");
}

/// Under the CLI, each refusal is a warning naming the skill, and the call on a good skill answers.
#[test]
fn refused_skills_are_named_in_the_log() {
    let ws = workspace();
    let home = workspace();
    let root = tempfile::tempdir().unwrap();
    let (skills, outside) = (root.path().join("skills"), root.path().join("outside"));
    std::fs::create_dir_all(&outside).unwrap();
    let bad = lay_out(&skills, &outside);
    let config = root.path().join("config.toml");
    std::fs::write(&config, format!("[skills]\ndirs = [{skills:?}]\n")).unwrap();
    let output = std::process::Command::new(toolshed_bin())
        .arg("--plugins")
        .arg(plugins())
        .arg("--config")
        .arg(&config)
        .arg("--cwd")
        .arg(ws.path())
        .args(["call", "use_skill", r#"{"skill_name":"good"}"#])
        .env("HOME", home.path())
        .env_remove("TOOLSHED_PLUGINS")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("# Skill \"good\" is now active"), "{stdout}");
    for (name, why) in bad {
        assert!(stderr.contains(&format!("skill \"{name}\" skipped: ")), "{name} not named in:\n{stderr}");
        assert!(stderr.contains(why), "{why:?} not in:\n{stderr}");
        // Once per bad skill, though the call lists the skills twice.
        assert_eq!(stderr.matches(&format!("skill \"{name}\" skipped: ")).count(), 1, "{stderr}");
    }
}
