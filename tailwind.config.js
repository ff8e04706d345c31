/** @type {import('tailwindcss').Config} */
// Tailwind scans these files for class names; anything not listed here never
// makes it into static/css/app.css.
module.exports = {
  content: ["./views/**/*.templ", "./views/**/*.go", "./web/**/*.go"],
  theme: {
    extend: {},
  },
  plugins: [],
};
