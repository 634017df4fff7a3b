// Simplified Chinese for Plotly: month and day names, the date formats of axis ticks and hover
// labels, and the mode bar's tooltips, in plotly.js's own locale-module format. Loaded after
// plotly.min.js on zh-hans pages only (templates/monitoring/_plotly.html); written here rather
// than fetched because pages never load anything from a CDN. setPlotConfig makes it the default
// of every chart on the page, so the page scripts pass no locale of their own.
(function () {
  "use strict";
  if (typeof Plotly === "undefined") return;
  Plotly.register({
    moduleType: "locale",
    name: "zh-CN",
    dictionary: {
      "Autoscale": "自动缩放",
      "Box Select": "矩形框选",
      "Click to enter X axis title": "点击输入 X 轴标题",
      "Compare data on hover": "悬停时比较数据",
      "Double-click to zoom back out": "双击缩小回原图",
      "Download plot": "下载图表",
      "Download plot as a PNG": "下载图表为 PNG",
      "Draw circle": "画圆",
      "Draw closed freeform": "画闭合自由形状",
      "Draw line": "画线",
      "Draw open freeform": "画开放自由形状",
      "Draw rectangle": "画矩形",
      "Erase active shape": "删除选中形状",
      "Lasso Select": "套索选择",
      "Orbital rotation": "轨道旋转",
      "Pan": "平移",
      "Produced with Plotly.js": "由 Plotly.js 生成",
      "Reset axes": "重置坐标轴",
      "Reset camera to default": "重置视角为默认",
      "Reset camera to last save": "重置视角为上次保存",
      "Reset view": "重置视图",
      "Show closest data on hover": "悬停时显示最近的数据",
      "Toggle Spike Lines": "切换辅助线",
      "Turntable rotation": "转台旋转",
      "Zoom": "缩放",
      "Zoom in": "放大",
      "Zoom out": "缩小",
      "kde:": "核密度：",
      "max": "最大值",
      "mean": "平均值",
      "median": "中位数",
      "min": "最小值",
      "new text": "新文本",
      "q1": "下四分位数",
      "q3": "上四分位数",
      "trace": "序列"
    },
    format: {
      days: ["星期日", "星期一", "星期二", "星期三", "星期四", "星期五", "星期六"],
      shortDays: ["周日", "周一", "周二", "周三", "周四", "周五", "周六"],
      months: ["一月", "二月", "三月", "四月", "五月", "六月", "七月", "八月", "九月", "十月", "十一月", "十二月"],
      shortMonths: ["1月", "2月", "3月", "4月", "5月", "6月", "7月", "8月", "9月", "10月", "11月", "12月"],
      periods: ["上午", "下午"],
      dateTime: "%Y年%-m月%-d日 %X",
      date: "%Y-%m-%d",
      time: "%H:%M:%S",
      decimal: ".",
      thousands: ",",
      grouping: [3],
      currency: ["¥", ""],
      // Axis ticks: "2026年", "2026年11月", "11月30日" under the times, "2026年11月30日".
      year: "%Y年",
      month: "%Y年%-m月",
      dayMonth: "%-m月%-d日",
      dayMonthYear: "%Y年%-m月%-d日"
    }
  });
  Plotly.setPlotConfig({ locale: "zh-CN" });
})();
