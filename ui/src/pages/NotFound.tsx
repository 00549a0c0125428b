import { Link } from "react-router";
import { PageTitle } from "../components/ui";

export function NotFound() {
  return (
    <>
      <PageTitle>Page not found</PageTitle>
      <p>
        There is no such page. <Link to="/">Go to the projects</Link>.
      </p>
    </>
  );
}
