//! The overlay registry: every overlay, built in or added by another crate, is an entry with an
//! id, a label for the help panel, an optional key and an on/off switch.
//!
//! Another crate adds its overlay without touching this one:
//!
//! ```no_run
//! use bevy::prelude::*;
//! use crowdfield_debug::prelude::*;
//!
//! const GROUP_MAPS: OverlayId = OverlayId("my_crate.group_maps");
//!
//! fn draw_group_maps(mut gizmos: Gizmos) {
//!     gizmos.circle_2d(Vec2::ZERO, 3.0, Color::WHITE);
//! }
//!
//! # fn main() {
//! App::new()
//!     .register_debug_overlay(
//!         OverlayInfo::new(GROUP_MAPS, "group maps").with_key(KeyCode::Digit8),
//!     )
//!     .add_systems(
//!         PostUpdate,
//!         draw_group_maps
//!             .in_set(CrowdDebugSystems::Draw)
//!             .run_if(overlay_enabled(GROUP_MAPS)),
//!     );
//! # }
//! ```
//!
//! The help panel lists it with its key, the key toggles it, and code switches it with
//! [`DebugOverlays::set`]. Systems gated by [`overlay_enabled`] do not run while it is off.

use bevy::prelude::*;

/// Names an overlay. By convention `"crate.overlay"`, e.g. `"crowdfield.heat_map"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Reflect)]
pub struct OverlayId(pub &'static str);

/// How an overlay is listed and switched.
#[derive(Debug, Clone, PartialEq, Reflect)]
pub struct OverlayInfo {
    /// Its id.
    pub id: OverlayId,
    /// A few words for the help panel.
    pub label: String,
    /// The key that toggles it, if any.
    pub key: Option<KeyCode>,
    /// Whether it is on.
    pub enabled: bool,
}

impl OverlayInfo {
    /// An overlay that starts off and has no key.
    pub fn new(id: OverlayId, label: impl Into<String>) -> Self {
        Self {
            id,
            label: label.into(),
            key: None,
            enabled: false,
        }
    }

    /// With a key that toggles it.
    pub fn with_key(mut self, key: KeyCode) -> Self {
        self.key = Some(key);
        self
    }

    /// Starting on.
    pub fn enabled(mut self) -> Self {
        self.enabled = true;
        self
    }
}

/// Every registered overlay, in the order registered (the help panel's order).
#[derive(Resource, Debug, Clone, Default, Reflect)]
#[reflect(Resource)]
pub struct DebugOverlays {
    entries: Vec<OverlayInfo>,
}

impl DebugOverlays {
    /// Adds an overlay, or replaces the entry with the same id (keeping its place).
    pub fn register(&mut self, info: OverlayInfo) {
        match self.entries.iter_mut().find(|e| e.id == info.id) {
            Some(entry) => *entry = info,
            None => self.entries.push(info),
        }
    }

    /// Whether an overlay is registered and on.
    pub fn is_enabled(&self, id: OverlayId) -> bool {
        self.get(id).is_some_and(|e| e.enabled)
    }

    /// An overlay's entry.
    pub fn get(&self, id: OverlayId) -> Option<&OverlayInfo> {
        self.entries.iter().find(|e| e.id == id)
    }

    /// Switches an overlay on or off. Returns `false` (and changes nothing) for an id that is
    /// not registered.
    pub fn set(&mut self, id: OverlayId, on: bool) -> bool {
        match self.entries.iter_mut().find(|e| e.id == id) {
            Some(entry) => {
                entry.enabled = on;
                true
            }
            None => false,
        }
    }

    /// Flips an overlay; returns its new state, `None` for an unknown id.
    pub fn toggle(&mut self, id: OverlayId) -> Option<bool> {
        let entry = self.entries.iter_mut().find(|e| e.id == id)?;
        entry.enabled = !entry.enabled;
        Some(entry.enabled)
    }

    /// Switches every overlay off.
    pub fn disable_all(&mut self) {
        for entry in &mut self.entries {
            entry.enabled = false;
        }
    }

    /// The entries in registration order.
    pub fn iter(&self) -> impl Iterator<Item = &OverlayInfo> {
        self.entries.iter()
    }
}

/// Registers overlays on an [`App`], before or after `CrowdDebugPlugin`.
pub trait DebugOverlayAppExt {
    /// Adds (or replaces) an overlay entry.
    fn register_debug_overlay(&mut self, info: OverlayInfo) -> &mut Self;
}

impl DebugOverlayAppExt for App {
    fn register_debug_overlay(&mut self, info: OverlayInfo) -> &mut Self {
        self.init_resource::<DebugOverlays>();
        self.world_mut()
            .resource_mut::<DebugOverlays>()
            .register(info);
        self
    }
}

/// Run condition: the overlay is registered and on.
pub fn overlay_enabled(id: OverlayId) -> impl FnMut(Option<Res<DebugOverlays>>) -> bool + Clone {
    move |overlays: Option<Res<DebugOverlays>>| overlays.is_some_and(|o| o.is_enabled(id))
}

/// Run condition for systems that keep something in step with an overlay (a texture, cached
/// lines): the overlay is on, or the switches just changed (so it can hide what it drew).
pub fn overlay_enabled_or_switched(
    id: OverlayId,
) -> impl FnMut(Option<Res<DebugOverlays>>) -> bool + Clone {
    move |overlays: Option<Res<DebugOverlays>>| {
        overlays.is_some_and(|o| o.is_changed() || o.is_enabled(id))
    }
}

/// Toggles overlays from their keys.
pub(crate) fn toggle_from_keys(
    keys: Option<Res<ButtonInput<KeyCode>>>,
    mut overlays: ResMut<DebugOverlays>,
) {
    let Some(keys) = keys else {
        return;
    };
    let pressed: Vec<OverlayId> = overlays
        .iter()
        .filter(|e| e.key.is_some_and(|k| keys.just_pressed(k)))
        .map(|e| e.id)
        .collect();
    for id in pressed {
        overlays.toggle(id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: OverlayId = OverlayId("test.a");
    const B: OverlayId = OverlayId("test.b");

    #[test]
    fn entries_keep_their_order_and_replace_by_id() {
        let mut overlays = DebugOverlays::default();
        overlays.register(OverlayInfo::new(A, "a"));
        overlays.register(OverlayInfo::new(B, "b").enabled());
        overlays.register(OverlayInfo::new(A, "a again").with_key(KeyCode::KeyA));
        let labels: Vec<_> = overlays.iter().map(|e| e.label.as_str()).collect();
        assert_eq!(labels, ["a again", "b"]);
        assert!(!overlays.is_enabled(A) && overlays.is_enabled(B));
        assert_eq!(overlays.toggle(A), Some(true));
        assert!(overlays.set(B, false));
        assert!(!overlays.set(OverlayId("test.unknown"), true));
        assert_eq!(overlays.toggle(OverlayId("test.unknown")), None);
        overlays.disable_all();
        assert!(overlays.iter().all(|e| !e.enabled));
    }

    #[derive(Resource, Default)]
    struct Runs(u32);

    #[test]
    fn keys_toggle_and_gated_systems_run_only_while_on() {
        let mut app = App::new();
        app.init_resource::<ButtonInput<KeyCode>>()
            .init_resource::<Runs>()
            .register_debug_overlay(OverlayInfo::new(A, "a").with_key(KeyCode::KeyA))
            .add_systems(
                Update,
                (
                    toggle_from_keys,
                    (|mut runs: ResMut<Runs>| runs.0 += 1).run_if(overlay_enabled(A)),
                )
                    .chain(),
            );
        app.update();
        assert_eq!(app.world().resource::<Runs>().0, 0);
        app.world_mut()
            .resource_mut::<ButtonInput<KeyCode>>()
            .press(KeyCode::KeyA);
        app.update();
        assert_eq!(app.world().resource::<Runs>().0, 1);
        // Held, not pressed again: stays on.
        app.world_mut()
            .resource_mut::<ButtonInput<KeyCode>>()
            .clear();
        app.update();
        assert_eq!(app.world().resource::<Runs>().0, 2);
        app.world_mut()
            .resource_mut::<DebugOverlays>()
            .set(A, false);
        app.update();
        assert_eq!(app.world().resource::<Runs>().0, 2);
    }
}
