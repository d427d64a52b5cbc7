//! Small file-system helpers shared by the tools: naming file types, opening without following a
//! final symbolic link, asking the kernel where an open file is, and formatting sizes.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};

/// The [`Kind`] of a file type value (`std`'s or `cap-std`'s), with the matching `FileTypeExt`
/// trait in scope on Unix.
macro_rules! kind_of {
    ($file_type:expr) => {{
        let file_type = $file_type;
        #[allow(unused_mut)] // Only Unix has the special kinds.
        let mut kind = Kind {
            dir: file_type.is_dir(),
            symlink: file_type.is_symlink(),
            file: file_type.is_file(),
            ..Kind::default()
        };
        #[cfg(unix)]
        {
            kind.fifo = file_type.is_fifo();
            kind.socket = file_type.is_socket();
            kind.char_device = file_type.is_char_device();
            kind.block_device = file_type.is_block_device();
        }
        kind
    }};
}

/// Describes a file type for an error message: `a directory`, `a FIFO (named pipe)`, ...
pub(crate) fn kind_name(file_type: &fs::FileType) -> &'static str {
    #[cfg(unix)]
    use std::os::unix::fs::FileTypeExt;
    describe(kind_of!(file_type))
}

/// [`kind_name`] for a file type read through a directory handle.
pub(crate) fn cap_kind_name(file_type: &cap_std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    use cap_std::fs::FileTypeExt;
    describe(kind_of!(file_type))
}

/// What [`describe`] needs to know of a file type.
#[derive(Debug, Default, Clone, Copy)]
struct Kind {
    fifo: bool,
    socket: bool,
    char_device: bool,
    block_device: bool,
    dir: bool,
    symlink: bool,
    file: bool,
}

fn describe(kind: Kind) -> &'static str {
    if kind.fifo {
        "a FIFO (named pipe)"
    } else if kind.socket {
        "a socket"
    } else if kind.char_device {
        "a character device"
    } else if kind.block_device {
        "a block device"
    } else if kind.dir {
        "a directory"
    } else if kind.symlink {
        "a symbolic link"
    } else if kind.file {
        "a regular file"
    } else {
        "not a regular file"
    }
}

/// Opens `path` for reading without following a final symbolic link (`O_NOFOLLOW`) and without
/// blocking on a FIFO or device swapped in after the caller's check (`O_NONBLOCK`). Callers still
/// check the handle's type with `File::metadata` (fstat).
pub(crate) fn open_read_nofollow(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    options.open(path)
}

/// Where the kernel says an open file is, from `/proc/self/fd` on Linux; `None` where that is
/// unknown. Used to confirm after opening that no directory on the way was swapped for a link.
pub(crate) fn opened_path(file: &File) -> Option<PathBuf> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())).ok()
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = file;
        None
    }
}

/// Whether an io error is "too many levels of symbolic links", i.e. `O_NOFOLLOW` met a link.
pub(crate) fn is_symlink_refusal(error: &io::Error) -> bool {
    #[cfg(unix)]
    {
        error.raw_os_error() == Some(libc::ELOOP)
    }
    #[cfg(not(unix))]
    {
        let _ = error;
        false
    }
}

/// A size for humans: `512B`, `50KB`, `1.5KB`, `12.3MB` (a whole number of units has no `.0`).
pub(crate) fn format_size(bytes: u64) -> String {
    const KB: u64 = 1024;
    const MB: u64 = 1024 * 1024;
    let (unit, name) = if bytes < KB {
        return format!("{bytes}B");
    } else if bytes < MB {
        (KB, "KB")
    } else {
        (MB, "MB")
    };
    if bytes % unit == 0 {
        format!("{}{name}", bytes / unit)
    } else {
        // Display only; precision loss on huge sizes is irrelevant.
        #[allow(clippy::cast_precision_loss)]
        let value = bytes as f64 / unit as f64;
        format!("{value:.1}{name}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        let got: Vec<String> = [0, 1023, 1024, 1536, 51200, 1_048_576, 1_300_000]
            .into_iter()
            .map(format_size)
            .collect();
        assert_eq!(
            got,
            ["0B", "1023B", "1KB", "1.5KB", "50KB", "1MB", "1.2MB"].map(String::from)
        );
    }

    #[cfg(unix)]
    #[test]
    fn open_refuses_a_final_symlink() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target.txt");
        fs::write(&target, "secret").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let err = open_read_nofollow(&link).unwrap_err();
        assert!(is_symlink_refusal(&err), "{err:?}");
        assert!(open_read_nofollow(&target).is_ok());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn opened_path_is_the_canonical_path() {
        let dir = tempfile::tempdir().unwrap();
        let path = fs::canonicalize(dir.path()).unwrap().join("a.txt");
        fs::write(&path, "x").unwrap();
        let file = open_read_nofollow(&path).unwrap();
        assert_eq!(opened_path(&file), Some(path));
    }
}
