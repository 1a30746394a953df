//! Text panels: the help panel (every registered overlay with its key and state), the stats
//! panel (agent counts by state, planner time per step) and the selected agent's decision
//! ((v, ε) of the biased local map, seed 001 Eq. 3; speed factor; goal and sub-goal depth).

use std::fmt::Write;

use bevy::prelude::*;
use bevy_crowdfield::prelude::*;

use crate::overlay::{DebugOverlays, OverlayId, overlay_enabled};
use crate::{CrowdDebugSettings, CrowdDebugSystems, SelectedAgent, ShownMap, shown_goal};

pub(crate) fn build(app: &mut App) {
    app.add_systems(
        Update,
        (
            update_help.run_if(
                resource_changed::<DebugOverlays>.or_eager(resource_changed::<CrowdDebugSettings>),
            ),
            update_stats.run_if(overlay_enabled(OverlayId::STATS)),
            update_agent_panel.run_if(overlay_enabled(OverlayId::LOCAL_MAP)),
            show_panels.run_if(
                resource_changed::<DebugOverlays>
                    .or_eager(resource_changed::<CrowdDebugSettings>)
                    .or_eager(resource_changed::<SelectedAgent>),
            ),
        )
            .in_set(CrowdDebugSystems::Draw),
    );
}

/// Which panel a text node is.
#[derive(Component, Clone, Copy, PartialEq, Eq)]
enum Panel {
    Help,
    Stats,
    Agent,
}

fn panel_node(corner: (Val, Val, Val, Val)) -> (Node, BackgroundColor) {
    let (top, right, bottom, left) = corner;
    (
        Node {
            position_type: PositionType::Absolute,
            top,
            right,
            bottom,
            left,
            padding: UiRect::all(px(6)),
            ..default()
        },
        BackgroundColor(Color::srgba(0.05, 0.05, 0.07, 0.78)),
    )
}

fn font() -> TextFont {
    TextFont {
        font_size: FontSize::Px(13.0),
        ..default()
    }
}

pub(crate) fn spawn_panels(mut commands: Commands) {
    let auto = Val::Auto;
    commands.spawn((
        Name::new("crowdfield debug: help"),
        Panel::Help,
        panel_node((px(8), px(8), auto, auto)),
        Text::new(""),
        font(),
    ));
    commands.spawn((
        Name::new("crowdfield debug: stats"),
        Panel::Stats,
        panel_node((auto, auto, px(8), px(8))),
        Text::new(""),
        font(),
    ));
    commands.spawn((
        Name::new("crowdfield debug: selected agent"),
        Panel::Agent,
        panel_node((auto, px(8), px(8), auto)),
        Text::new(""),
        font(),
        Visibility::Hidden,
    ));
}

/// F1 hides and shows the help panel.
pub(crate) fn help_key(
    keys: Option<Res<ButtonInput<KeyCode>>>,
    mut settings: ResMut<CrowdDebugSettings>,
) {
    if let (Some(keys), Some(key)) = (keys, settings.help_key)
        && keys.just_pressed(key)
    {
        settings.show_help = !settings.show_help;
    }
}

fn key_name(key: KeyCode) -> String {
    let name = format!("{key:?}");
    name.strip_prefix("Digit")
        .or_else(|| name.strip_prefix("Key"))
        .unwrap_or(&name)
        .to_string()
}

/// The help text: overlays with keys and states, then the other keys.
pub(crate) fn help_text(overlays: &DebugOverlays, settings: &CrowdDebugSettings) -> String {
    let mut text = String::from("crowdfield debug overlays\n");
    for entry in overlays.iter() {
        let key = entry.key.map(key_name).unwrap_or_else(|| "-".into());
        let state = if entry.enabled { "on " } else { "off" };
        let _ = writeln!(text, "[{key}] {state}  {}", entry.label);
    }
    let map = match settings.shown_map {
        ShownMap::FollowSelection => "the selected agent's goal".to_string(),
        ShownMap::Goal(i) => format!("goal {i}"),
    };
    if let Some(k) = settings.next_map_key {
        let _ = writeln!(text, "[{}] map shown: {map}", key_name(k));
    }
    if let Some(k) = settings.next_agent_key {
        let _ = writeln!(
            text,
            "[{0}] / [Shift+{0}] next / previous agent",
            key_name(k)
        );
    }
    if let Some(b) = settings.select_button {
        let _ = writeln!(text, "[{b:?} click] select the agent under the cursor");
    }
    if let Some(k) = settings.help_key {
        let _ = write!(text, "[{}] hide this panel", key_name(k));
    }
    text
}

fn update_help(
    overlays: Res<DebugOverlays>,
    settings: Res<CrowdDebugSettings>,
    mut panel: Query<(&mut Text, &Panel)>,
) {
    for (mut text, panel) in &mut panel {
        if *panel == Panel::Help {
            text.0 = help_text(&overlays, &settings);
        }
    }
}

fn show_panels(
    overlays: Res<DebugOverlays>,
    settings: Res<CrowdDebugSettings>,
    selected: Res<SelectedAgent>,
    mut panels: Query<(&mut Visibility, &Panel)>,
) {
    let shown = |on: bool| {
        if on {
            Visibility::Inherited
        } else {
            Visibility::Hidden
        }
    };
    for (mut v, panel) in &mut panels {
        let on = match panel {
            Panel::Help => settings.show_help,
            Panel::Stats => overlays.is_enabled(OverlayId::STATS),
            Panel::Agent => overlays.is_enabled(OverlayId::LOCAL_MAP) && selected.0.is_some(),
        };
        v.set_if_neq(shown(on));
    }
}

fn update_stats(
    world: Res<CrowdWorld>,
    settings: Res<CrowdDebugSettings>,
    selected: Res<SelectedAgent>,
    mut panel: Query<(&mut Text, &Panel)>,
) {
    let Some(mut text) = panel
        .iter_mut()
        .find_map(|(t, p)| (*p == Panel::Stats).then_some(t))
    else {
        return;
    };
    let Some(crowd) = world.crowd() else {
        text.0 = "no crowd yet".into();
        return;
    };
    use bevy_crowdfield::steer::AgentState as S;
    let mut counts = [0usize; 5];
    let mut total = 0;
    for (_, agent) in crowd.agents() {
        total += 1;
        counts[match agent.state() {
            S::Moving => 0,
            S::Waiting => 1,
            S::Arrived => 2,
            S::Stuck => 3,
            S::Unreachable => 4,
        }] += 1;
    }
    let shown =
        shown_goal(&world, &settings, *selected).map_or_else(|| "-".into(), |g| g.0.to_string());
    let mut s = String::new();
    let _ = writeln!(
        s,
        "agents {total}: {} moving, {} waiting, {} arrived",
        counts[0], counts[1], counts[2]
    );
    let _ = writeln!(s, "{} stuck, {} unreachable", counts[3], counts[4]);
    let _ = write!(
        s,
        "step {}: {:.2} ms   map: goal {shown} of {}, {} re-solves waiting",
        crowd.step_count(),
        world.last_step_time().as_secs_f64() * 1e3,
        crate::goal_count(crowd),
        crowd.pending_map_solves(),
    );
    text.0 = s;
}

fn update_agent_panel(
    selected: Res<SelectedAgent>,
    world: Res<CrowdWorld>,
    agents: Query<(&AgentState, Option<&Name>)>,
    mut panel: Query<(&mut Text, &Panel)>,
) {
    let Some(mut text) = panel
        .iter_mut()
        .find_map(|(t, p)| (*p == Panel::Agent).then_some(t))
    else {
        return;
    };
    let Some(entity) = selected.0 else {
        return;
    };
    let Some((id, agent)) = world
        .agent_id(entity)
        .and_then(|id| Some((id, world.crowd()?.agent(id)?)))
    else {
        text.0 = format!("agent {entity}: not in the crowd (yet)");
        return;
    };
    let (state, name) = agents.get(entity).unwrap_or((&AgentState::Pending, None));
    let bias = agent.bias();
    let v = bias.direction();
    let p = agent.position();
    let descent = agent.local_map().descent_at(p);
    let goals = agent.params().goals.len();
    let mut s = String::new();
    let _ = writeln!(
        s,
        "agent {entity} (crowd #{}){}: {state:?}",
        id.0,
        name.map(|n| format!(" \"{n}\"")).unwrap_or_default()
    );
    let _ = writeln!(
        s,
        "position ({:.2}, {:.2})  heading ({:.2}, {:.2})",
        p.x,
        p.y,
        agent.heading().x,
        agent.heading().y
    );
    let _ = writeln!(
        s,
        "(v, eps) = (({:.2}, {:.2}), {:.2})   speed factor {:.2}",
        v.x,
        v.y,
        bias.epsilon(),
        agent.speed_factor()
    );
    let _ = write!(
        s,
        "local descent ({:.3}, {:.3})   goal {}/{}   sub-goals {}",
        descent.x,
        descent.y,
        (agent.goal_index() + 1).min(goals),
        goals,
        agent.subgoal_depth()
    );
    text.0 = s;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::OverlayInfo;

    #[test]
    fn help_lists_every_overlay_with_its_key_and_state() {
        let mut overlays = DebugOverlays::default();
        overlays.register(OverlayInfo::new(OverlayId::HEAT_MAP, "heat").with_key(KeyCode::Digit1));
        overlays.register(OverlayInfo::new(OverlayId("other.crate"), "theirs").enabled());
        let text = help_text(&overlays, &CrowdDebugSettings::default());
        assert!(text.contains("[1] off  heat"), "{text}");
        assert!(text.contains("[-] on   theirs"), "{text}");
        assert!(text.contains("[Tab] / [Shift+Tab]"), "{text}");
        assert!(text.contains("[F1] hide this panel"), "{text}");
    }
}
