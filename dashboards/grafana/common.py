"""Shared factories: datasource and label variables, panels and queries with one look.

Why factories: every panel of the three dashboards must be templated by the same variables
(datasource, job, namespace, pod, instance, model) and use rates over ``$__rate_interval``
(never raw counters); building them in one place keeps that true by construction.

Why ``namespace`` and ``pod`` in every selector: on Kubernetes each series names the Triton
pod it is about (the PodMonitor's target labels for Triton's own series; the fleet ``watch``'s
own labels, kept by ``honorLabels``, for its series), so every panel can be narrowed to one
pod. Without Kubernetes (compose, a host) the labels are absent, and the variables' ``All``
(``.*``, which matches an absent label) keeps every panel as it was.
"""

from __future__ import annotations

from grafana_foundation_sdk.builders import common as common_builder
from grafana_foundation_sdk.builders import dashboard, prometheus, stat, table, text, timeseries
from grafana_foundation_sdk.models import common
from grafana_foundation_sdk.models import prometheus as prom
from grafana_foundation_sdk.models.dashboard import (
    DataSourceRef,
    VariableOption,
    VariableRefresh,
    VariableSort,
)
from grafana_foundation_sdk.models.text import TextMode

__all__ = [
    "BUILD_COMMAND",
    "DATASOURCE",
    "POD",
    "POD_LEGEND",
    "RATE",
    "SEL",
    "SRV",
    "WATCHED_POD",
    "banner",
    "datasource_variable",
    "per_request",
    "query",
    "query_variable",
    "stat_panel",
    "table_panel",
    "timeseries_panel",
]

BUILD_COMMAND = "triton-obs dashboards build"
DATASOURCE = DataSourceRef(type_val="prometheus", uid="${datasource}")
RATE = "$__rate_interval"
"""Grafana's window for rate(): at least four scrape intervals, so a rate never has one sample."""
SRV = 'job=~"$job",namespace=~"$namespace",pod=~"$pod",instance=~"$instance"'
"""Every panel's selector for server-wide series (no model label)."""
SEL = f'{SRV},model=~"$model"'
"""Every panel's selector for per-model series."""
POD = "namespace, pod, instance"
"""One Triton pod, in Triton's own series: the PodMonitor's target labels (``instance`` keeps
hosts apart where there are no pods)."""
WATCHED_POD = "namespace, pod, target"
"""One Triton pod, in ``watch``'s series: a fleet ``watch`` labels each series with the pod
(and its ``target`` name, the only label of a target off Kubernetes); a sidecar's series get
the pod's from the scrape. Not ``instance``: that is the ``watch`` pod's address."""
POD_LEGEND = "{{namespace}}/{{pod}}"


def datasource_variable() -> dashboard.DatasourceVariable:
    return dashboard.DatasourceVariable("datasource").label("Data source").type("prometheus")


def query_variable(name: str, label: str, query_text: str) -> dashboard.QueryVariable:
    """A multi-value label variable, ``All`` by default (``.*`` so unseen values still match)."""
    return (
        dashboard.QueryVariable(name)
        .label(label)
        .query(query_text)
        .datasource(DATASOURCE)
        .current(VariableOption(selected=True, text="All", value="$__all"))
        .refresh(VariableRefresh.ON_TIME_RANGE_CHANGED)
        .sort(VariableSort.ALPHABETICAL_ASC)
        .multi(True)
        .include_all(True)
        .all_value(".*")
    )


def query(expr: str, legend: str = "", ref_id: str = "A") -> prometheus.Dataquery:
    return prometheus.Dataquery().expr(expr).legend_format(legend or "__auto").ref_id(ref_id)


def per_request(duration_counter: str, sel: str, by: str = "model") -> str:
    """Mean time per finished request: the increase of a duration counter over the increase of
    the success counter (both rates, so restarts and scrape gaps cancel out)."""
    return (
        f"sum by ({by}) (rate({duration_counter}{{{sel}}}[{RATE}]))"
        f" / sum by ({by}) (rate(nv_inference_request_success{{{sel}}}[{RATE}]))"
    )


def timeseries_panel(
    title: str, description: str, targets: list[prometheus.Dataquery], unit: str = "short",
    span: int = 12, height: int = 8, stack: bool = False,
) -> timeseries.Panel:  # fmt: skip
    panel = (
        timeseries.Panel()
        .title(title)
        .description(description)
        .datasource(DATASOURCE)
        .unit(unit)
        .span(span)
        .height(height)
        .line_width(1)
        .fill_opacity(10 if not stack else 40)
        .show_points(common.VisibilityMode.NEVER)
        .legend(
            common_builder.VizLegendOptions()
            # The SDK's enums are enum.StrEnum (3.11+, as is the SDK): mypy's 3.10 target
            # sees them as str. Same for the two below.
            .display_mode(common.LegendDisplayMode.TABLE)  # type: ignore[arg-type]
            .placement(common.LegendPlacement.BOTTOM)
            .show_legend(True)
            .calcs(["mean", "max", "lastNotNull"])
        )
        .tooltip(
            common_builder.VizTooltipOptions()
            .mode(common.TooltipDisplayMode.MULTI)  # type: ignore[arg-type]
            .sort(common.SortOrder.DESCENDING)
        )
    )
    if stack:
        stacking = common_builder.StackingConfig().mode(
            common.StackingMode.NORMAL  # type: ignore[arg-type]
        )
        panel = panel.stacking(stacking)
    for i, target in enumerate(targets):
        panel = panel.with_target(target.ref_id(chr(ord("A") + i)))
    return panel


def stat_panel(
    title: str, description: str, expr: str, unit: str = "short", span: int = 6, height: int = 4
) -> stat.Panel:
    return (
        stat.Panel()
        .title(title)
        .description(description)
        .datasource(DATASOURCE)
        .unit(unit)
        .span(span)
        .height(height)
        .reduce_options(common_builder.ReduceDataOptions().calcs(["lastNotNull"]))
        .color_mode(common.BigValueColorMode.VALUE)
        .graph_mode(common.BigValueGraphMode.AREA)
        .with_target(query(expr))
    )


def table_panel(title: str, description: str, expr: str, span: int = 24) -> table.Panel:
    """An instant query rendered as a table, one row per series (labels as columns)."""
    return (
        table.Panel()
        .title(title)
        .description(description)
        .datasource(DATASOURCE)
        .span(span)
        .height(8)
        .with_target(query(expr).instant().format(prom.PromQueryFormat.TABLE))
    )


def banner(source: str) -> text.Panel:
    """Grafana JSON cannot hold comments: the do-not-edit notice is a panel (and the
    dashboard's description)."""
    return (
        text.Panel()
        .title("")
        .transparent(True)
        .span(24)
        .height(2)
        .mode(TextMode.MARKDOWN)
        .content(
            f"Generated by `{BUILD_COMMAND}` from `{source}`. **Do not edit** here or in the "
            "JSON: edit the Python and rebuild."
        )
    )
