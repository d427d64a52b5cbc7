//! Workspace path resolution on arbitrary paths, in a root with links pointing inside and
//! outside: an accepted path is always inside the root.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use oxpi_tools::Workspace;

struct Fixture {
    _dir: tempfile::TempDir,
    workspace: Workspace,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        let root = dir.path().join("root");
        let _ = std::fs::create_dir_all(root.join("sub/deeper"));
        let _ = std::fs::create_dir_all(dir.path().join("root-evil"));
        let _ = std::fs::write(root.join("sub/file.txt"), "x");
        let _ = std::os::unix::fs::symlink("..", root.join("sub/up"));
        let _ = std::os::unix::fs::symlink(dir.path(), root.join("out"));
        let _ = std::os::unix::fs::symlink("sub/deeper", root.join("in"));
        let _ = std::os::unix::fs::symlink("/nonexistent/far", root.join("dangling"));
        let workspace = Workspace::new(&root).unwrap_or_else(|e| panic!("workspace: {e}"));
        Fixture { _dir: dir, workspace }
    })
}

fuzz_target!(|data: &[u8]| {
    let path = String::from_utf8_lossy(data);
    let fixture = fixture();
    if let Ok(resolved) = fixture.workspace.resolve(&path) {
        let root = fixture.workspace.root();
        assert!(resolved.starts_with(root), "{path:?} resolved to {resolved:?}");
        // The deepest existing ancestor, with links resolved, is inside the root too.
        let mut probe = resolved.as_path();
        while !probe.exists() {
            match probe.parent() {
                Some(parent) => probe = parent,
                None => break,
            }
        }
        if let Ok(real) = probe.canonicalize() {
            assert!(real.starts_with(root), "{path:?} leads to {real:?}");
        }
    }
});
