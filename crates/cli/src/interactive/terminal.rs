//! The terminal for the interactive view: raw mode, bracketed paste and an inline viewport at
//! the bottom of the screen (the conversation goes into the scrollback above it), put back as
//! it was on every way out: a normal exit, a panic (hook), SIGTERM/SIGHUP (the loop stops and
//! the guard drops).

use std::io::{Stdout, Write};

use crossterm::event::{DisableBracketedPaste, EnableBracketedPaste};
use crossterm::{cursor, execute, terminal};
use ratatui::backend::CrosstermBackend;
use ratatui::text::Line;
use ratatui::widgets::{Paragraph, Widget};
use ratatui::{Terminal, TerminalOptions, Viewport};

/// The terminal type of the view.
pub(crate) type Term = Terminal<CrosstermBackend<Stdout>>;

/// The terminal in raw mode; dropping it restores the terminal.
pub(crate) struct Tui {
    /// The ratatui terminal with the inline viewport.
    pub terminal: Term,
}

/// Puts the terminal back: raw mode off, paste mode off, cursor shown. Safe to call twice.
pub(crate) fn restore() {
    let _ = terminal::disable_raw_mode();
    let mut out = std::io::stdout();
    let _ = execute!(out, DisableBracketedPaste, cursor::Show);
    let _ = out.flush();
}

/// The viewport height for a screen of `rows` rows: half the screen, at least 12 rows (less
/// on a smaller screen).
pub(crate) fn viewport_height(rows: u16) -> u16 {
    (rows / 2).max(12).min(rows)
}

impl Tui {
    /// Enters raw mode and makes the inline viewport; installs the panic hook.
    pub(crate) fn enter() -> std::io::Result<Self> {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            previous(info);
        }));
        terminal::enable_raw_mode()?;
        let mut out = std::io::stdout();
        if let Err(e) = execute!(out, EnableBracketedPaste) {
            restore();
            return Err(e);
        }
        let (_, rows) = terminal::size().unwrap_or((80, 24));
        let terminal = Terminal::with_options(
            CrosstermBackend::new(std::io::stdout()),
            TerminalOptions {
                viewport: Viewport::Inline(viewport_height(rows)),
            },
        );
        match terminal {
            Ok(terminal) => Ok(Self { terminal }),
            Err(e) => {
                restore();
                Err(e)
            }
        }
    }

    /// Writes `lines` into the scrollback above the viewport.
    pub(crate) fn print(&mut self, lines: Vec<Line<'static>>) -> std::io::Result<()> {
        if lines.is_empty() {
            return Ok(());
        }
        let height = u16::try_from(lines.len()).unwrap_or(u16::MAX);
        self.terminal.insert_before(height, |buf| {
            Paragraph::new(lines).render(buf.area, buf);
        })
    }
}

impl Drop for Tui {
    fn drop(&mut self) {
        // Leave the screen with the conversation in the scrollback and the cursor where the
        // viewport began, so the shell's prompt follows it.
        let _ = self.terminal.clear();
        let area = self.terminal.get_frame().area();
        let _ = execute!(std::io::stdout(), cursor::MoveTo(0, area.y));
        restore();
    }
}
