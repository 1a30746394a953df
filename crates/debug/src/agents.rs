//! Per-agent overlays: selection, agent states, the selected agent's local map and decision
//! (seed 001 §3: the BVP local map with the biased equation ∇²p + ε v·∇p = 0, Eq. 3; its zones,
//! stamped neighbours and intermediate goal; the descent, heading and speed factor that the
//! motion laws derive from it) and sub-goal stacks (seed 000 §4.2).

use bevy::prelude::*;
use bevy_crowdfield::field::CellKind;
use bevy_crowdfield::prelude::*;

use crate::ground::{GroundGizmos, GroundRes};
use crate::overlay::{DebugOverlays, OverlayId, overlay_enabled, overlay_enabled_or_switched};
use crate::{CrowdDebugSettings, CrowdDebugSystems, SelectedAgent, paint};

/// Colour of an agent state in the overlays.
pub fn state_colour(state: AgentState) -> Color {
    match state {
        AgentState::Pending => Color::srgb(0.6, 0.6, 0.6),
        AgentState::Moving => Color::srgb(0.25, 0.55, 0.95),
        AgentState::Waiting => Color::srgb(0.95, 0.8, 0.2),
        AgentState::Arrived => Color::srgb(0.3, 0.85, 0.35),
        AgentState::Stuck => Color::srgb(1.0, 0.5, 0.1),
        AgentState::Unreachable => Color::srgb(0.9, 0.15, 0.15),
        AgentState::Rejected => Color::srgb(0.6, 0.2, 0.7),
    }
}

const SELECTION: Color = Color::srgb(1.0, 0.95, 0.3);
const WINDOW: Color = Color::srgb(0.95, 0.95, 0.95);
const FREE_ZONE: Color = Color::srgba(0.95, 0.95, 0.95, 0.45);
const NEIGHBOUR: Color = Color::srgb(1.0, 0.55, 0.15);
/// Neighbours walking the selected agent's way, which `NeighbourStamping::ExceptSameWay` leaves
/// out of its map.
const LEFT_OUT: Color = Color::srgba(1.0, 0.55, 0.15, 0.35);
const LOCAL_GOAL: Color = Color::srgb(0.3, 1.0, 0.4);
const DESCENT: Color = Color::srgb(0.35, 0.95, 1.0);
const HEADING: Color = Color::WHITE;
const BIAS: Color = Color::srgb(1.0, 0.3, 0.85);
const SUBGOAL: Color = Color::srgb(0.84, 0.19, 0.67);

pub(crate) fn build(app: &mut App) {
    app.add_systems(
        Update,
        (
            draw_selection.run_if(|s: Res<SelectedAgent>| s.0.is_some()),
            sync_local_sprite.run_if(overlay_enabled_or_switched(OverlayId::LOCAL_MAP)),
            draw_local_map.run_if(overlay_enabled(OverlayId::LOCAL_MAP)),
            draw_states.run_if(overlay_enabled(OverlayId::AGENT_STATES)),
            draw_subgoals.run_if(overlay_enabled(OverlayId::SUBGOALS)),
        )
            .in_set(CrowdDebugSystems::Draw),
    );
}

/// Click selects the agent under the cursor (or clears); Tab / Shift+Tab step through agents in
/// the crowd's order.
#[allow(clippy::too_many_arguments)]
pub(crate) fn select(
    settings: Res<CrowdDebugSettings>,
    keys: Option<Res<ButtonInput<KeyCode>>>,
    buttons: Option<Res<ButtonInput<MouseButton>>>,
    windows: Query<&Window>,
    cameras: Query<(&Camera, &GlobalTransform, Has<Camera2d>)>,
    agents: Query<(Entity, &GlobalTransform, &AgentStyle), With<CrowdAgent>>,
    world: Res<CrowdWorld>,
    ground: GroundRes,
    mut selected: ResMut<SelectedAgent>,
) {
    let ground = ground.get();
    if let (Some(buttons), Some(button)) = (buttons, settings.select_button)
        && buttons.just_pressed(button)
        && let Some(p) = ground.cursor(&windows, &cameras)
    {
        let hit = pick(
            agents
                .iter()
                .map(|(e, t, s)| (e, ground.to_ground(t.translation()), s.radius as f32)),
            p,
        );
        selected.set_if_neq(SelectedAgent(hit));
    }
    let (Some(keys), Some(key)) = (keys, settings.next_agent_key) else {
        return;
    };
    if !keys.just_pressed(key) {
        return;
    }
    let Some(crowd) = world.crowd() else {
        return;
    };
    let order: Vec<Entity> = crowd
        .agents()
        .filter_map(|(id, _)| world.entity(id))
        .collect();
    if order.is_empty() {
        return;
    }
    let back = keys.any_pressed([KeyCode::ShiftLeft, KeyCode::ShiftRight]);
    let at = selected.0.and_then(|e| order.iter().position(|o| *o == e));
    let next = match (at, back) {
        (None, false) => 0,
        (None, true) => order.len() - 1,
        (Some(i), false) => (i + 1) % order.len(),
        (Some(i), true) => (i + order.len() - 1) % order.len(),
    };
    selected.0 = Some(order[next]);
}

/// The agent whose disc (grown by 0.3 m, so small agents stay clickable) holds `point`; the
/// nearest when discs overlap.
pub(crate) fn pick(
    agents: impl Iterator<Item = (Entity, Vec2, f32)>,
    point: Vec2,
) -> Option<Entity> {
    agents
        .map(|(e, at, radius)| (e, at.distance(point), radius))
        .filter(|(_, d, r)| *d <= r + 0.3)
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(e, _, _)| e)
}

/// Clears a selection whose entity is gone.
pub(crate) fn forget_missing(
    mut selected: ResMut<SelectedAgent>,
    agents: Query<(), With<CrowdAgent>>,
) {
    if let Some(e) = selected.0
        && agents.get(e).is_err()
    {
        selected.0 = None;
    }
}

fn draw_selection(
    selected: Res<SelectedAgent>,
    agents: Query<(&GlobalTransform, &AgentStyle), With<CrowdAgent>>,
    mut gizmos: GroundGizmos,
) {
    if let Some((t, style)) = selected.0.and_then(|e| agents.get(e).ok()) {
        let r = style.radius as f32;
        let at = gizmos.ground().to_ground(t.translation());
        gizmos.circle(at, r * 1.6 + 0.1, SELECTION, 32);
    }
}

fn draw_states(
    agents: Query<(&GlobalTransform, &AgentState, &AgentStyle), With<CrowdAgent>>,
    mut gizmos: GroundGizmos,
) {
    let ground = gizmos.ground();
    for (t, state, style) in &agents {
        gizmos.circle(
            ground.to_ground(t.translation()),
            style.radius as f32 * 1.3,
            state_colour(*state),
            12,
        );
    }
}

#[derive(Component)]
struct LocalMapSprite {
    drawn_from: (u32, u64),
}

/// The selected agent's local map as a texture, refreshed once per planner step.
fn sync_local_sprite(
    mut commands: Commands,
    overlays: Res<DebugOverlays>,
    selected: Res<SelectedAgent>,
    world: Res<CrowdWorld>,
    ground: GroundRes,
    mut images: ResMut<Assets<Image>>,
    mut sprites: Query<(
        &mut LocalMapSprite,
        &mut Sprite,
        &mut Transform,
        &mut Visibility,
    )>,
) {
    let agent = overlays
        .is_enabled(OverlayId::LOCAL_MAP)
        .then(|| {
            let crowd = world.crowd()?;
            let id = world.agent_id(selected.0?)?;
            Some((id, crowd.step_count(), crowd.agent(id)?))
        })
        .flatten();
    let Some((id, step, agent)) = agent else {
        for (_, _, _, mut visibility) in &mut sprites {
            visibility.set_if_neq(Visibility::Hidden);
        }
        return;
    };
    let key = (id.0, step);
    let field = agent.local_map().field();
    let (lo, hi) = field.geometry().world_bounds();
    let placed = ground.get().picture(lo.as_vec2(), hi.as_vec2(), -5.0, 4.0);
    let size = (hi - lo).as_vec2();
    let picture = || crate::global::map_image(&paint::heat_map(field, 215));
    match sprites.single_mut() {
        Ok((mut cached, mut sprite, mut transform, mut visibility)) => {
            visibility.set_if_neq(Visibility::Inherited);
            if cached.drawn_from != key {
                sprite.image = images.add(picture());
                sprite.custom_size = Some(size);
                *transform = placed;
                cached.drawn_from = key;
            }
        }
        Err(_) => {
            commands.spawn((
                Name::new("crowdfield debug: local map"),
                LocalMapSprite { drawn_from: key },
                Sprite {
                    image: images.add(picture()),
                    custom_size: Some(size),
                    ..default()
                },
                placed,
            ));
        }
    }
}

/// Zones, intermediate goal, stamped neighbours and the decision of the selected agent.
fn draw_local_map(selected: Res<SelectedAgent>, world: Res<CrowdWorld>, mut gizmos: GroundGizmos) {
    let Some(crowd) = world.crowd() else {
        return;
    };
    let Some((id, agent)) = selected
        .0
        .and_then(|e| world.agent_id(e))
        .and_then(|id| Some((id, crowd.agent(id)?)))
    else {
        return;
    };
    let local = agent.local_map();
    let field = local.field();
    let geometry = field.geometry();
    let (lo, hi) = geometry.world_bounds();
    let (lo, hi) = (lo.as_vec2(), hi.as_vec2());
    let cell = geometry.cell_size() as f32;
    gizmos.rect((lo + hi) * 0.5, hi - lo, WINDOW);
    // The ring inside the border that is never stamped (free zone), and the border itself.
    let inset = cell * (1 + local.settings().free_zone) as f32;
    gizmos.rect(
        (lo + hi) * 0.5,
        hi - lo - Vec2::splat(2.0 * inset),
        FREE_ZONE,
    );
    gizmos.rect(
        (lo + hi) * 0.5,
        hi - lo - Vec2::splat(2.0 * cell),
        FREE_ZONE,
    );
    for y in 0..field.height() {
        for x in 0..field.width() {
            if field.kind(x, y) == Some(CellKind::Goal) {
                let c = geometry.cell_centre(x, y).as_vec2();
                gizmos.rect(c, Vec2::splat(cell * 0.8), LOCAL_GOAL);
            }
        }
    }
    // Neighbours inside the window: the discs stamped into it this step, and faintly those
    // it left out as walking its way (as they stand after the step, as the others do).
    let stamping = local.settings().neighbours.unwrap_or_default();
    for (other, a) in crowd.agents() {
        let p = a.position().as_vec2();
        if other == id || p.x < lo.x || p.y < lo.y || p.x > hi.x || p.y > hi.y {
            continue;
        }
        let planning = a.is_settling() || a.state() != bevy_crowdfield::steer::AgentState::Arrived;
        let left_out = planning
            && stamping.leaves_out(
                agent.way(),
                agent.params().max_step,
                a.heading(),
                a.way(),
                a.params().max_step,
                a.stalled(),
            );
        let colour = if left_out { LEFT_OUT } else { NEIGHBOUR };
        gizmos.circle(p, a.params().radius as f32, colour, 32);
    }
    for shape in crowd.moving_obstacles() {
        if let Ok((a, b)) = shape.bounds() {
            let (a, b) = (a.as_vec2(), b.as_vec2());
            if a.x < hi.x && a.y < hi.y && b.x > lo.x && b.y > lo.y {
                gizmos.rect((a + b) * 0.5, b - a, NEIGHBOUR);
            }
        }
    }
    let p = agent.position().as_vec2();
    let reach = (hi.x - lo.x) * 0.3;
    if let Some(d) = local.descent_at(agent.position()).try_normalize() {
        gizmos.arrow(p, p + d.as_vec2() * reach, DESCENT);
    }
    if let Some(h) = agent.heading().try_normalize() {
        gizmos.arrow(p, p + h.as_vec2() * reach * 0.7, HEADING);
    }
    let bias = agent.bias();
    let v = bias.direction().as_vec2() * bias.epsilon() as f32;
    if v.length() > 1e-6 {
        gizmos.arrow(p, p + v * reach * 0.8, BIAS);
    }
}

/// Rings on every agent that follows sub-goals (one per layer, up to four) and each layer's
/// goal cells (its iso-contour of the field below) for up to 32 such agents.
fn draw_subgoals(world: Res<CrowdWorld>, mut gizmos: GroundGizmos) {
    let Some(crowd) = world.crowd() else {
        return;
    };
    let mut drawn = 0;
    for (_, agent) in crowd.agents() {
        let depth = agent.subgoal_depth();
        if depth == 0 {
            continue;
        }
        let p = agent.position().as_vec2();
        let r = agent.params().radius as f32;
        for ring in 0..depth.min(4) {
            gizmos.circle(p, r * (1.5 + 0.35 * ring as f32), SUBGOAL, 32);
        }
        if drawn >= 32 {
            continue;
        }
        drawn += 1;
        for (layer, field) in agent.subgoals().layers().enumerate() {
            let geometry = field.geometry();
            let cell = geometry.cell_size() as f32;
            let shade = SUBGOAL.mix(&Color::WHITE, 0.6 * layer as f32 / depth.max(2) as f32);
            for y in 0..field.height() {
                for x in 0..field.width() {
                    if field.kind(x, y) == Some(CellKind::Goal) {
                        let c = geometry.cell_centre(x, y).as_vec2();
                        gizmos.rect(c, Vec2::splat(cell * 0.7), shade);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bevy::time::TimeUpdateStrategy;

    #[test]
    fn a_click_picks_the_nearest_disc_under_it() {
        let (a, b) = (
            Entity::from_raw_u32(1).unwrap(),
            Entity::from_raw_u32(2).unwrap(),
        );
        let agents = [
            (a, Vec2::new(0.0, 0.0), 0.25),
            (b, Vec2::new(0.6, 0.0), 0.25),
        ];
        assert_eq!(pick(agents.into_iter(), Vec2::new(0.1, 0.0)), Some(a));
        assert_eq!(pick(agents.into_iter(), Vec2::new(0.45, 0.0)), Some(b));
        assert_eq!(pick(agents.into_iter(), Vec2::new(0.2, 0.4)), Some(a));
        assert_eq!(pick(agents.into_iter(), Vec2::new(3.0, 0.0)), None);
    }

    #[test]
    fn tab_steps_through_agents_and_a_despawned_selection_is_cleared() {
        let mut app = App::new();
        app.add_plugins((MinimalPlugins, bevy_crowdfield::CrowdfieldPlugin))
            .insert_resource(TimeUpdateStrategy::ManualDuration(
                std::time::Duration::from_millis(300),
            ))
            .init_resource::<CrowdDebugSettings>()
            .init_resource::<SelectedAgent>()
            .init_resource::<ButtonInput<KeyCode>>()
            .add_systems(Update, (select, forget_missing).chain());
        for i in 0..3 {
            app.world_mut().spawn((
                CrowdAgent,
                Transform::from_xyz(5.0 + 3.0 * i as f32, 5.0, 0.0),
                AgentGoals::point(Vec2::new(40.0, 5.0)),
            ));
        }
        for _ in 0..4 {
            app.update();
        }
        // The crowd's order, which Tab follows.
        let world = app.world().resource::<CrowdWorld>();
        let agents: Vec<Entity> = world
            .crowd()
            .unwrap()
            .agents()
            .filter_map(|(id, _)| world.entity(id))
            .collect();
        assert_eq!(agents.len(), 3);
        let press = |app: &mut App, keys: &[KeyCode]| {
            let mut input = app.world_mut().resource_mut::<ButtonInput<KeyCode>>();
            input.reset_all();
            for k in keys {
                input.press(*k);
            }
            app.update();
            app.world().resource::<SelectedAgent>().0
        };
        assert_eq!(press(&mut app, &[KeyCode::Tab]), Some(agents[0]));
        assert_eq!(press(&mut app, &[KeyCode::Tab]), Some(agents[1]));
        assert_eq!(press(&mut app, &[KeyCode::Tab]), Some(agents[2]));
        assert_eq!(press(&mut app, &[KeyCode::Tab]), Some(agents[0]), "wraps");
        assert_eq!(
            press(&mut app, &[KeyCode::ShiftLeft, KeyCode::Tab]),
            Some(agents[2]),
            "Shift goes back"
        );
        app.world_mut().despawn(agents[2]);
        assert_eq!(press(&mut app, &[]), None);
    }
}
