/** @type {import('tailwindcss').Config} */
// Tailwind scans these files for class names; anything not listed here never
// makes it into static/css/app.css.

// Seats are placed on a CSS grid by classes (col-start-N row-start-N)
// because the Content-Security-Policy forbids inline styles. The classes
// are computed at run time, so they are listed here and safelisted.
const positions = (n) =>
  Object.fromEntries(Array.from({ length: n }, (_, i) => [String(i + 1), String(i + 1)]));

module.exports = {
  content: ["./views/**/*.templ", "./views/**/*.go", "./web/**/*.go", "./static/js/charteditor.js", "./static/js/door.js"],
  safelist: [{ pattern: /^col-start-\d+$/ }, { pattern: /^row-start-\d+$/ }],
  theme: {
    extend: {
      gridColumnStart: positions(200),
      gridRowStart: positions(160),
    },
  },
  plugins: [],
};
